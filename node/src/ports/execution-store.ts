/**
 * The fenced execution protocol (docs/architecture.md sections 3, 5 and 6) as the cold tier
 * offers it: what a worker — the Node worker role, or any process speaking
 * the HTTP execution endpoints — may do to a task once a dispatcher has
 * ARMED it and published its envelope.
 *
 * Ground rules (every implementation):
 *  - Authority is the fencing token. A call changes a task only while its
 *    `fencingToken` is the task's current token and the task is in the state
 *    the call expects; otherwise it changes nothing and answers `stale`. The
 *    execution lease's expiry is not checked by heartbeat/complete/fail: until
 *    the reconciler takes the task away (which gives it a new token), the
 *    holder of the current token is the authority, however late.
 *  - `stale` covers every "0 rows" case: a wrong or older token, a task that
 *    was cancelled, already started (a duplicate delivery), already
 *    terminal, re-armed or retried since. `not_found` means no task with this
 *    id exists for this tenant (another tenant's task is `not_found` too).
 *    The HTTP layer answers `stale` with 409 and `not_found` with 404.
 *  - Every call is durable (committed) before it resolves; a rejection means
 *    "unknown, ask again" (Postgres down: a ChronofenceError Unavailable,
 *    which the HTTP layer answers with 503). Repeating a call that did commit
 *    answers `stale` for start/complete/fail (the state moved on) — callers
 *    treat a `stale` after an unknown outcome as "done or taken over".
 *  - Times are epoch milliseconds read from the caller's injected clock
 *    (`nowMs`), read when the call is sent (a lease dated before a retry
 *    loop could be expired on arrival). One exception: whether a task is due
 *    is the database's clock's to say (`start` answers `not_due`), so no
 *    node's clock — fast, or a worker's over HTTP — can start a task early.
 *
 * Tenancy: every method that takes an `ExecutionRef` is scoped to
 * `ref.tenantId` and, in the Postgres adapter built for the API role
 * (`chronofence_api`, row-level security), runs inside a transaction with
 * app.tenant_id set to it. The Node worker passes the tenant from the
 * envelope, so the same calls serve it. `expireLeases` is the reconciler's,
 * across tenants (chronofence_dispatch, never the API role).
 *
 * Attempts: `tasks.attempt` counts the starts of a task (but those a
 * stopping worker interrupted, see `interrupt`). `start` increments
 * it and returns the new value (1 for the first run), which the handler sees
 * as its attempt; the envelope's `attempt` is the count before this start.
 * A failure with `attempt >= max_attempts` (or a non-retryable one) is final.
 */
import type { DueEntry } from "./hot-tier.js";

/** Identifies one attempt of one task, as an envelope or an HTTP worker names it. */
export interface ExecutionRef {
  tenantId: string;
  taskId: string;
  /** The envelope's fencing_token (decimal string of a bigint). */
  fencingToken: string;
  /**
   * The envelope's run_at, if known: lets Postgres touch one partition
   * instead of probing every day's. A run_at that is not the task's current
   * one (the task was retried or replayed since) answers `stale`.
   * HTTP workers may omit it (slower, same answers).
   */
  runAtMs?: number;
  /**
   * The envelope's dispatched_at (when its dispatcher fired it), if known:
   * `start` stores it as tasks.dispatched_at, for the task's timeline. It
   * costs no write of its own (the start's UPDATE sets it) and fences nothing.
   */
  dispatchedAtMs?: number;
}

/** What a worker reports when an attempt fails. Stored as tasks.last_error and in dead_letters. */
export interface ExecutionFailure {
  /** Human-readable, at most a few KiB (longer text is truncated by the store). */
  message: string;
  /** A stable code if the worker has one (e.g. "timeout", "http_503", "ECONNRESET"). */
  code?: string;
  /**
   * False: retrying cannot help (bad input, a permanent refusal): the task
   * goes DEAD at once. True: it is retried while attempts remain.
   */
  retryable: boolean;
  /** Any JSON the worker wants kept with the failure (stack, response body...). */
  details?: unknown;
}

/** A started attempt: what the worker needs to run it. */
export interface StartedExecution {
  /** 1 for the first run; the handler's ctx.attempt. */
  attempt: number;
  maxAttempts: number;
  /** The task's run_at of this attempt (lateness = start time − this). */
  runAtMs: number;
  timeoutMs: number;
  /** Renew (heartbeat) before this, or the reconciler may fail the attempt. */
  leaseExpiresAtMs: number;
}

export type StartOutcome =
  | { kind: "started"; execution: StartedExecution }
  /**
   * ARMED with this token, but its run_at is still ahead of the database's
   * now() by `dueInMs` (0: it became due meanwhile): nothing changed, ask
   * again then. Not a failure: no attempt is spent.
   */
  | { kind: "not_due"; dueInMs: number }
  | { kind: "stale" }
  | { kind: "not_found" };

/** How a worker with no handler for a task's type hands it back (ExecutionStore.handBack). */
export interface HandBackPolicy {
  /** Due again then, for another worker (one that knows the type, after a rolling deployment). */
  retryAtMs: number;
  /** Dead (reason unknown_type) once no worker had a handler for this long. */
  deadAfterMs: number;
}

export type HeartbeatOutcome =
  | { kind: "extended"; leaseExpiresAtMs: number }
  | { kind: "stale" }
  | { kind: "not_found" };

export type CompleteOutcome =
  /**
   * `released`: workflow nodes this completion made due, in the same
   * transaction (absent or empty outside workflows). The caller adds them to
   * the hot tier after the call (HotTier.addDue); a lost add is repaired by
   * the reconciler's re-hydration and the pre-loader, a few seconds later.
   */
  { kind: "completed"; released?: readonly DueEntry[] } | { kind: "stale" } | { kind: "not_found" };

export type FailOutcome =
  /** Back to SCHEDULED at `nextRunAtMs` with a new fencing token; the next start is attempt `attempt + 1`. */
  | { kind: "retrying"; attempt: number; nextRunAtMs: number; tenantId: string; taskId: string }
  /** DEAD, with the dead_letters row `deadLetterId`; `released` as for CompleteOutcome. */
  | { kind: "dead"; attempt: number; deadLetterId: string; released?: readonly DueEntry[] }
  /**
   * A workflow node that would have been retried, but its workflow already
   * failed (fail_fast) or was cancelled: CANCELLED instead (no dead letter).
   */
  | { kind: "cancelled"; attempt: number; released?: readonly DueEntry[] }
  | { kind: "stale" }
  | { kind: "not_found" };

export type ReplayOutcome =
  /**
   * DEAD → SCHEDULED at `runAtMs` (= nowMs) with a new fencing token. The
   * caller should add {tenantId, taskId, runAtMs} to the hot tier as for a
   * fresh submission (HotTier.addDue); if it does not, the pre-loader or the
   * reconciler's re-hydration will, a few seconds later.
   */
  | { kind: "replayed"; tenantId: string; taskId: string; runAtMs: number }
  /** The task exists but is not DEAD (the HTTP layer answers 409 with its status). */
  | { kind: "not_dead"; status: string }
  /**
   * A DEAD node of a workflow: not replayed (409). Its death already counted
   * in its children's trigger rules and the workflow's status; re-opening it
   * would need to undo those. Submit a new workflow instead.
   */
  | { kind: "workflow_node"; workflowId: string }
  | { kind: "not_found" };

/** One RUNNING task the reconciler failed because its execution lease expired. */
export interface ExpiredLease {
  tenantId: string;
  taskId: string;
  /** "cancelled": a workflow node whose workflow already failed (fail_fast) or was cancelled. */
  outcome: "retrying" | "dead" | "cancelled";
  /** Set when retrying: the new run_at, for the hot tier. */
  nextRunAtMs: number | null;
  /** Workflow nodes released by this task's death or cancellation (see CompleteOutcome). */
  released: readonly DueEntry[];
}

export interface ExecutionStore {
  /**
   * ARMED → RUNNING, fenced: only if the task is ARMED with exactly
   * `ref.fencingToken` and its run_at is not after the database's now().
   * Sets lease_owner = workerId, lease_expires_at = nowMs + leaseMs,
   * started_at = nowMs, attempt = attempt + 1.
   * `not_due`: ARMED with this token but due later by the database's clock.
   * `stale`: wrong token, cancelled, a duplicate delivery (already RUNNING or
   * further), terminal. A worker that gets `stale` must not run the task.
   */
  start(ref: ExecutionRef, workerId: string, leaseMs: number, nowMs: number): Promise<StartOutcome>;

  /**
   * Extends the execution lease of a RUNNING task held with this token to
   * nowMs + leaseMs (and records workerId as its lease owner). `stale`: the
   * token is no longer current (the reconciler failed the attempt, the task
   * finished): the worker should abort the attempt — its commit would be
   * rejected anyway.
   */
  heartbeat(
    ref: ExecutionRef,
    workerId: string,
    leaseMs: number,
    nowMs: number,
  ): Promise<HeartbeatOutcome>;

  /**
   * RUNNING → COMPLETED, fenced, storing `resultJson` (JSON text; "null" for
   * no result) as tasks.result. `stale` changes nothing: a zombie's late
   * commit after a take-over lands here. A workflow node's children are
   * released in the same transaction (adapters/pg/workflow-release.ts).
   */
  complete(ref: ExecutionRef, resultJson: string, nowMs: number): Promise<CompleteOutcome>;

  /**
   * RUNNING → fenced failure. Stores the failure as last_error; then, by the
   * task's retry policy (domain/retry.ts: exponential backoff with full
   * jitter between backoff_base_ms and backoff_max_ms, or fixed):
   *  - retryable and attempt < max_attempts: SCHEDULED at nowMs + backoff,
   *    with a new fencing token (the row may move to another day's partition);
   *  - otherwise DEAD, with a dead_letters row holding the failure, the
   *    attempt, the token, the payload and the type;
   *  - a workflow node that would be retried while its workflow already
   *    failed (fail_fast) or was cancelled: CANCELLED.
   * A workflow node's DEAD or CANCELLED is counted by its workflow (children
   * released or skipped) in the same transaction.
   */
  fail(ref: ExecutionRef, failure: ExecutionFailure, nowMs: number): Promise<FailOutcome>;

  /**
   * RUNNING → SCHEDULED at nowMs, fenced, for an attempt its worker stopped
   * before it finished (the worker's drain timeout passed): not the task's
   * failure, so no backoff, and the attempt is given back (tasks.attempt − 1:
   * the next start has the same attempt number, and an interrupted last
   * attempt still runs again). Stores `failure` as last_error; new fencing
   * token, as for `fail`. A workflow node whose workflow already failed
   * (fail_fast) or was cancelled: CANCELLED. Never DEAD.
   */
  interrupt(ref: ExecutionRef, failure: ExecutionFailure, nowMs: number): Promise<FailOutcome>;

  /**
   * RUNNING → SCHEDULED at `policy.retryAtMs`, fenced, for an attempt whose
   * worker has no handler for the task's type: as `interrupt`, the attempt
   * is given back and a new token drawn. `failure` is stored as last_error
   * with `details.unhandled_since_ms`, the first hand back of this run of
   * them (kept from the last_error of an earlier one); once nowMs is
   * `policy.deadAfterMs` past it, the task is DEAD instead (reason
   * unknown_type, with its dead letter). A workflow node whose workflow
   * already failed or was cancelled: CANCELLED.
   */
  handBack(
    ref: ExecutionRef,
    failure: ExecutionFailure,
    nowMs: number,
    policy: HandBackPolicy,
  ): Promise<FailOutcome>;

  /**
   * A DEAD task of this tenant → SCHEDULED at nowMs with a new fencing token;
   * its open dead_letters rows get replayed_at = nowMs; an audit_log row
   * (action "task.replay", apiKeyId) is written in the same transaction.
   * The next start is one more attempt (attempt keeps counting); if that
   * attempt fails, the task is DEAD again at once (the budget is spent) with
   * a new dead_letters row.
   */
  replay(
    tenantId: string,
    taskId: string,
    apiKeyId: string | null,
    nowMs: number,
  ): Promise<ReplayOutcome>;

  /**
   * The reconciler's duty (all tenants): RUNNING tasks whose
   * lease_expires_at < nowMs are failed with a new fencing token (so the old
   * holder's heartbeat/complete/fail is `stale`), code "lease_expired",
   * retryable — retried or dead-lettered like `fail`. At most `limit` per
   * call; idempotent (a second call right after finds nothing).
   */
  expireLeases(nowMs: number, limit: number): Promise<ExpiredLease[]>;

  /**
   * What a workflow node's handler sees of its parents: {parent_key: result}
   * for each parent that COMPLETED. Callers ask only for tasks whose
   * envelope names a workflow.
   */
  parentResults(tenantId: string, taskId: string): Promise<Record<string, unknown>>;
}
