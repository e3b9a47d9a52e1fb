/**
 * The Postgres ExecutionStore (contract: ports/execution-store.ts; SQL:
 * sql/execution.ts). Two ways to build it:
 *  - `rowLevelSecurity: true` for a pool that SETs chronofence_api (the API
 *    role): every call runs in a transaction with app.tenant_id set;
 *  - `false` for the login role (worker, reconciler): one-statement calls go
 *    straight to the pool (one round trip), still filtered by tenant_id.
 *
 * This class says what each call does; how a call reaches Postgres is in
 * fenced-calls.ts, the coalesced batches in execution-batches.ts, failures
 * and dead letters in settle-failures.ts, workflow releases in
 * release-terminal.ts.
 */
import { decideFailure, decideInterrupted, type RandomSource } from "../../domain/retry.js";
import { isUuid } from "../../domain/uuid.js";
import type {
  CompleteOutcome,
  ExecutionFailure,
  ExecutionRef,
  ExecutionStore,
  ExpiredLease,
  FailOutcome,
  HandBackPolicy,
  HeartbeatOutcome,
  ReplayOutcome,
  StartOutcome,
} from "../../ports/execution-store.js";
import { roundMs } from "./epoch-ms.js";
import { fromPgError } from "./errors.js";
import { ExecutionBatches, type StartRow } from "./execution-batches.js";
import {
  FencedCalls,
  hasRunAt,
  type Missing,
  type Queryable,
  withRunAt,
  withRunAtParam,
} from "./fenced-calls.js";
import type { PgPool } from "./pool.js";
import { releaseTerminal, type TerminalRow } from "./release-terminal.js";
import {
  type DecidedFailure,
  type FailureRow,
  retryStateOf,
  settleFailures,
} from "./settle-failures.js";
import {
  completeTask,
  heartbeatTask,
  LOCK_EXPIRED,
  LOCK_TASK,
  lockRunningTask,
  MOVE_IDEMPOTENCY_KEYS,
  REPLAY_TASK,
  START_REFUSAL,
  startTask,
} from "./sql/execution.js";
import { parentResults } from "./workflow-release.js";

export interface PgExecutionStoreOptions {
  rowLevelSecurity: boolean;
  random: RandomSource;
  /** Ids of dead_letters rows (UUIDv7 from the injected clock). */
  newId: () => string;
  /** Attempts of a statement that lost a race with a partition move (SQLSTATE 40001). */
  maxSerializationRetries?: number;
  /**
   * Coalesce starts and completions that name their run_at into one
   * statement per event-loop turn, up to this many rows (login role only;
   * 0 or absent: one statement per call).
   */
  coalesceMax?: number;
  /** Coalesced statements of full batches out at once (one while a batch is not full); more calls wait and join the next. */
  coalesceMaxInFlight?: number;
  /** How long a coalesced completion waits for more after its first call (0: the next turn). */
  completionLingerMs?: number;
  /** How long every coalesced call waits for more while the load is high (0: never). */
  busyLingerMs?: number;
  /** The clock that stamps a coalesced start when its statement leaves (absent: when it was asked for). */
  nowMs?: () => number;
}

const START = [startTask(false), startTask(true)] as const;
const HEARTBEAT = [heartbeatTask(false), heartbeatTask(true)] as const;
const COMPLETE = [completeTask(false), completeTask(true)] as const;
const LOCK_RUNNING = [lockRunningTask(false), lockRunningTask(true)] as const;
const LOCK_RUNNING_WITH_ERROR = [
  lockRunningTask(false, true),
  lockRunningTask(true, true),
] as const;

/** A started row (START or START_MANY) as the port answers it. */
const startedOf = (row: StartRow): StartOutcome => ({
  kind: "started",
  execution: {
    attempt: row.attempt,
    maxAttempts: row.max_attempts,
    runAtMs: roundMs(row.run_at_ms),
    timeoutMs: row.timeout_ms,
    leaseExpiresAtMs: roundMs(row.lease_expires_at_ms),
  },
});

/** Why a start changed nothing: not found, not due yet by the database's clock, or stale. */
async function startRefusal(
  db: Queryable,
  ref: ExecutionRef,
): Promise<{ kind: "not_due"; dueInMs: number } | Missing> {
  const row = (await db.query(START_REFUSAL, [ref.tenantId, ref.taskId, ref.fencingToken])).rows[0];
  if (!row) return { kind: "not_found" };
  if (row.armed) return { kind: "not_due", dueInMs: Math.ceil(row.due_in_ms) };
  return { kind: "stale" };
}

/** The first hand back of an unbroken run of them, from the task's last_error (null: none before). */
function unhandledSinceMs(lastError: unknown, code: string | undefined): number | null {
  const error = lastError as { code?: unknown; details?: { unhandled_since_ms?: unknown } } | null;
  if (error?.code !== code) return null;
  const sinceMs = error?.details?.unhandled_since_ms;
  return typeof sinceMs === "number" && Number.isFinite(sinceMs) ? sinceMs : null;
}

export class PgExecutionStore implements ExecutionStore {
  private readonly calls: FencedCalls;
  private readonly batches: ExecutionBatches | null = null;

  constructor(
    pool: PgPool,
    private readonly options: PgExecutionStoreOptions,
  ) {
    this.calls = new FencedCalls(
      pool,
      options.rowLevelSecurity,
      options.maxSerializationRetries ?? 3,
    );
    const max = options.coalesceMax ?? 0;
    if (max > 1 && !options.rowLevelSecurity) {
      this.batches = new ExecutionBatches(pool, this.calls, {
        maxBatch: max,
        maxInFlight: options.coalesceMaxInFlight ?? Number.POSITIVE_INFINITY,
        completionLingerMs: options.completionLingerMs ?? 0,
        busyLingerMs: options.busyLingerMs ?? 0,
        ...(options.nowMs && { nowMs: options.nowMs }),
      });
    }
  }

  start(
    ref: ExecutionRef,
    workerId: string,
    leaseMs: number,
    nowMs: number,
  ): Promise<StartOutcome> {
    const operation = "start execution";
    if (this.batches && hasRunAt(ref) && this.calls.wellFormed(ref)) {
      return this.batches.start({ ref, workerId, leaseMs, nowMs }).then(
        (row) =>
          row ? startedOf(row) : this.calls.fenced(ref, operation, (db) => startRefusal(db, ref)),
        (error: unknown) => {
          throw fromPgError(error, operation);
        },
      );
    }
    return this.calls.fenced(ref, operation, async (db) => {
      const dispatchedMs = ref.dispatchedAtMs ?? null;
      const params = [ref.tenantId, ref.taskId, ref.fencingToken, workerId, nowMs, leaseMs];
      const all = withRunAtParam(ref, [...params, dispatchedMs]);
      const row: StartRow | undefined = (await db.query(START[withRunAt(ref)], all)).rows[0];
      return row ? startedOf(row) : startRefusal(db, ref);
    });
  }

  heartbeat(
    ref: ExecutionRef,
    workerId: string,
    leaseMs: number,
    nowMs: number,
  ): Promise<HeartbeatOutcome> {
    return this.calls.fenced(ref, "heartbeat execution", async (db) => {
      const params = [ref.tenantId, ref.taskId, ref.fencingToken, workerId, nowMs, leaseMs];
      const result = await db.query(HEARTBEAT[withRunAt(ref)], withRunAtParam(ref, params));
      const row = result.rows[0];
      if (!row) return null;
      return { kind: "extended" as const, leaseExpiresAtMs: roundMs(row.lease_expires_at_ms) };
    });
  }

  /** In a transaction: a workflow node's children are released with its completion. */
  complete(ref: ExecutionRef, resultJson: string, nowMs: number): Promise<CompleteOutcome> {
    const operation = "complete execution";
    if (this.batches && hasRunAt(ref) && this.calls.wellFormed(ref)) {
      return this.batches.complete({ ref, resultJson, nowMs }).then(
        (released): CompleteOutcome | Promise<CompleteOutcome> =>
          released
            ? { kind: "completed" as const, released }
            : this.calls.staleOrMissing(ref, operation),
        (error: unknown) => {
          throw fromPgError(error, operation);
        },
      );
    }
    return this.calls.fenced(
      ref,
      operation,
      async (db) => {
        const params = [ref.tenantId, ref.taskId, ref.fencingToken, resultJson, nowMs];
        const result = await db.query(COMPLETE[withRunAt(ref)], withRunAtParam(ref, params));
        const row: TerminalRow | undefined = result.rows[0];
        if (!row) return null;
        const released = await releaseTerminal(db, [{ ...row, id: ref.taskId }], nowMs);
        return { kind: "completed" as const, released: released.get(ref.taskId) ?? [] };
      },
      true,
    );
  }

  parentResults(tenantId: string, taskId: string): Promise<Record<string, unknown>> {
    if (!isUuid(taskId) || !isUuid(tenantId)) return Promise.resolve({});
    return this.calls
      .scoped(tenantId, (db: Queryable) => parentResults(db, taskId))
      .catch((error: unknown) => {
        throw fromPgError(error, "read parent results");
      });
  }

  fail(ref: ExecutionRef, failure: ExecutionFailure, nowMs: number): Promise<FailOutcome> {
    return this.settleOne(ref, "fail execution", nowMs, (row) => ({
      row,
      failure,
      decision: decideFailure(retryStateOf(row), failure, nowMs, this.options.random),
    }));
  }

  interrupt(ref: ExecutionRef, failure: ExecutionFailure, nowMs: number): Promise<FailOutcome> {
    return this.settleOne(ref, "interrupt execution", nowMs, (row) => ({
      row,
      failure,
      decision: decideInterrupted(nowMs),
      givenBack: true,
    }));
  }

  handBack(
    ref: ExecutionRef,
    failure: ExecutionFailure,
    nowMs: number,
    policy: HandBackPolicy,
  ): Promise<FailOutcome> {
    const decide = (row: FailureRow): DecidedFailure => {
      const lastError = (row as FailureRow & { last_error: unknown }).last_error;
      const sinceMs = unhandledSinceMs(lastError, failure.code) ?? nowMs;
      const kept = { ...failure, details: { unhandled_since_ms: sinceMs } };
      if (nowMs - sinceMs >= policy.deadAfterMs) {
        return { row, failure: kept, decision: { kind: "dead", reason: "unknown_type" } };
      }
      const delayMs = Math.max(0, policy.retryAtMs - nowMs);
      const decision = { kind: "retry" as const, delayMs, nextRunAtMs: nowMs + delayMs };
      return { row, failure: kept, decision, givenBack: true };
    };
    return this.settleOne(ref, "hand back execution", nowMs, decide, LOCK_RUNNING_WITH_ERROR);
  }

  async replay(
    tenantId: string,
    taskId: string,
    apiKeyId: string | null,
    nowMs: number,
  ): Promise<ReplayOutcome> {
    if (!isUuid(taskId)) return { kind: "not_found" };
    try {
      return await this.calls.inTenant(tenantId, async (db) => {
        const current = (await db.query(LOCK_TASK, [tenantId, taskId])).rows[0];
        if (!current) return { kind: "not_found" as const };
        if (current.status !== "DEAD") return { kind: "not_dead" as const, status: current.status };
        if (current.workflow_id !== null)
          return { kind: "workflow_node" as const, workflowId: current.workflow_id as string };
        await db.query(REPLAY_TASK, [tenantId, taskId, current.run_at_ms, nowMs, apiKeyId]);
        if (current.idempotency_key !== null) {
          await db.query(MOVE_IDEMPOTENCY_KEYS, [[tenantId], [current.idempotency_key], [nowMs]]);
        }
        return { kind: "replayed" as const, tenantId, taskId, runAtMs: nowMs };
      });
    } catch (error) {
      throw fromPgError(error, "replay task");
    }
  }

  /** Locks the RUNNING task held with this token, decides its failure and settles it, in one transaction. */
  private settleOne(
    ref: ExecutionRef,
    operation: string,
    nowMs: number,
    decide: (row: FailureRow) => DecidedFailure,
    lock: readonly [string, string] = LOCK_RUNNING,
  ): Promise<FailOutcome> {
    return this.calls.fenced(
      ref,
      operation,
      async (db) => {
        const params = [ref.tenantId, ref.taskId, ref.fencingToken];
        const locked = await db.query(lock[withRunAt(ref)], withRunAtParam(ref, params));
        const row: FailureRow | undefined = locked.rows[0];
        if (!row) return null;
        const settled = await settleFailures(db, [decide(row)], nowMs, () => this.options.newId());
        return settled[0]!.outcome;
      },
      true,
    );
  }

  async expireLeases(nowMs: number, limit: number): Promise<ExpiredLease[]> {
    try {
      return await this.calls.inTransactionWithRetries(async (db) => {
        const locked = await db.query(LOCK_EXPIRED, [nowMs, limit]);
        const failures = locked.rows.map((row: FailureRow) => {
          const failure: ExecutionFailure = {
            message: `the execution lease held by ${row.lease_owner ?? "?"} expired`,
            code: "lease_expired",
            retryable: true,
          };
          const decision = decideFailure(
            retryStateOf(row),
            { retryable: true, expired: true },
            nowMs,
            this.options.random,
          );
          return { row, decision, failure };
        });
        const settled = await settleFailures(db, failures, nowMs, () => this.options.newId());
        return settled.map(({ row, outcome }) => ({
          tenantId: row.tenant_id,
          taskId: row.id,
          outcome: outcome.kind as "retrying" | "dead" | "cancelled",
          nextRunAtMs: outcome.kind === "retrying" ? outcome.nextRunAtMs : null,
          released: "released" in outcome ? (outcome.released ?? []) : [],
        }));
      });
    } catch (error) {
      throw fromPgError(error, "expire execution leases");
    }
  }
}
