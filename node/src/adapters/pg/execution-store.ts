/**
 * The Postgres ExecutionStore (contract: ports/execution-store.ts; SQL:
 * sql/execution.ts). Two ways to build it:
 *  - `rowLevelSecurity: true` for a pool that SETs chronofence_api (the API
 *    role): every call runs in a transaction with app.tenant_id set;
 *  - `false` for the login role (worker, reconciler): one-statement calls go
 *    straight to the pool (one round trip), still filtered by tenant_id.
 */
import type pg from "pg";
import { decideFailure, type FailureDecision, type RandomSource } from "../../domain/retry.js";
import type { BackoffStrategy } from "../../domain/task.js";
import type {
  CompleteOutcome,
  ExecutionFailure,
  ExecutionRef,
  ExecutionStore,
  ExpiredLease,
  FailOutcome,
  HeartbeatOutcome,
  ReplayOutcome,
  StartOutcome,
} from "../../ports/execution-store.js";
import type { DueEntry } from "../../ports/hot-tier.js";
import { Coalescer, type Settled } from "./coalescer.js";
import { fromPgError, isDataException } from "./errors.js";
import { type PgPool, withTenant } from "./pool.js";
import {
  CANCEL_FAILED,
  COMPLETE_MANY,
  completeTask,
  heartbeatTask,
  INSERT_DEAD_LETTERS,
  LOCK_EXPIRED,
  LOCK_TASK,
  LOCK_WORKFLOWS,
  lockRunningTask,
  MOVE_IDEMPOTENCY_KEYS,
  REPLAY_TASK,
  SETTLE_FAILURES,
  START_MANY,
  startTask,
  TASK_STATUS,
} from "./sql/execution.js";
import { parentResults, releaseDependents } from "./workflow-release.js";

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
}

interface StartInput {
  ref: ExecutionRef & { runAtMs: number };
  workerId: string;
  leaseMs: number;
  nowMs: number;
}
interface CompleteInput {
  ref: ExecutionRef & { runAtMs: number };
  resultJson: string;
  nowMs: number;
}
// biome-ignore lint/suspicious/noExplicitAny: a row of START_MANY, read field by field
type Row = any;

/** A pool (one statement, autocommit) or a client inside a transaction. */
type Queryable = Pick<pg.PoolClient, "query">;

const START = [startTask(false), startTask(true)] as const;
const HEARTBEAT = [heartbeatTask(false), heartbeatTask(true)] as const;
const COMPLETE = [completeTask(false), completeTask(true)] as const;
const LOCK_RUNNING = [lockRunningTask(false), lockRunningTask(true)] as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TOKEN = /^[1-9][0-9]{0,17}$/; // any bigint the sequence can hand out soon
const MAX_DETAILS_CHARS = 16_384;

export class PgExecutionStore implements ExecutionStore {
  private readonly maxRetries: number;
  private readonly starts: Coalescer<StartInput, Row | null> | null = null;
  /** A completion's value: the workflow nodes it released, or null (stale). */
  private readonly completions: Coalescer<CompleteInput, DueEntry[] | null> | null = null;

  constructor(
    private readonly pool: PgPool,
    private readonly options: PgExecutionStoreOptions,
  ) {
    this.maxRetries = options.maxSerializationRetries ?? 3;
    const max = options.coalesceMax ?? 0;
    if (max > 1 && !options.rowLevelSecurity) {
      this.starts = new Coalescer((inputs) => this.startMany(inputs), max);
      this.completions = new Coalescer((inputs) => this.completeMany(inputs), max);
    }
  }

  start(
    ref: ExecutionRef,
    workerId: string,
    leaseMs: number,
    nowMs: number,
  ): Promise<StartOutcome> {
    return this.fenced(ref, "start execution", async (db) => {
      let row: Row | null;
      if (this.starts && hasRunAt(ref)) {
        row = await this.starts.submit({ ref, workerId, leaseMs, nowMs });
      } else {
        const params = [ref.tenantId, ref.taskId, ref.fencingToken, workerId, nowMs, leaseMs];
        row = (await db.query(START[withRunAt(ref)], withRunAtParam(ref, params))).rows[0];
      }
      if (!row) return null;
      return {
        kind: "started" as const,
        execution: {
          attempt: row.attempt,
          maxAttempts: row.max_attempts,
          runAtMs: Math.round(row.run_at_ms),
          timeoutMs: row.timeout_ms,
          leaseExpiresAtMs: Math.round(row.lease_expires_at_ms),
        },
      };
    });
  }

  heartbeat(
    ref: ExecutionRef,
    workerId: string,
    leaseMs: number,
    nowMs: number,
  ): Promise<HeartbeatOutcome> {
    return this.fenced(ref, "heartbeat execution", async (db) => {
      const params = [ref.tenantId, ref.taskId, ref.fencingToken, workerId, nowMs, leaseMs];
      const result = await db.query(HEARTBEAT[withRunAt(ref)], withRunAtParam(ref, params));
      const row = result.rows[0];
      if (!row) return null;
      return { kind: "extended" as const, leaseExpiresAtMs: Math.round(row.lease_expires_at_ms) };
    });
  }

  /** In a transaction: a workflow node's children are released with its completion. */
  complete(ref: ExecutionRef, resultJson: string, nowMs: number): Promise<CompleteOutcome> {
    return this.fenced(
      ref,
      "complete execution",
      async (db) => {
        if (this.completions && hasRunAt(ref)) {
          const released = await this.completions.submit({ ref, resultJson, nowMs });
          return released ? { kind: "completed" as const, released } : null;
        }
        const params = [ref.tenantId, ref.taskId, ref.fencingToken, resultJson, nowMs];
        const result = await db.query(COMPLETE[withRunAt(ref)], withRunAtParam(ref, params));
        const row: TerminalRow | undefined = result.rows[0];
        if (!row) return null;
        const released = (await this.release(db, [{ ...row, id: ref.taskId }], nowMs)).get(
          ref.taskId,
        );
        return { kind: "completed" as const, released: released ?? [] };
      },
      !(this.completions && hasRunAt(ref)),
    );
  }

  parentResults(tenantId: string, taskId: string): Promise<Record<string, unknown>> {
    if (!UUID.test(taskId) || !UUID.test(tenantId)) return Promise.resolve({});
    const read = (db: Queryable) => parentResults(db, taskId);
    return (
      this.options.rowLevelSecurity ? withTenant(this.pool, tenantId, read) : read(this.pool)
    ).catch((error: unknown) => {
      throw fromPgError(error, "read parent results");
    });
  }

  fail(ref: ExecutionRef, failure: ExecutionFailure, nowMs: number): Promise<FailOutcome> {
    return this.fenced(
      ref,
      "fail execution",
      async (db) => {
        const params = [ref.tenantId, ref.taskId, ref.fencingToken];
        const locked = await db.query(LOCK_RUNNING[withRunAt(ref)], withRunAtParam(ref, params));
        const row: FailureRow | undefined = locked.rows[0];
        if (!row) return null;
        const decision = decideFailure(stateOf(row), failure, nowMs, this.options.random);
        const settled = await this.settle(db, [{ row, decision, failure }], nowMs);
        return settled[0]!.outcome;
      },
      true,
    );
  }

  async replay(
    tenantId: string,
    taskId: string,
    apiKeyId: string | null,
    nowMs: number,
  ): Promise<ReplayOutcome> {
    if (!UUID.test(taskId)) return { kind: "not_found" };
    try {
      return await this.withRetries(() =>
        withTenant(this.pool, tenantId, async (db) => {
          const current = (await db.query(LOCK_TASK, [tenantId, taskId])).rows[0];
          if (!current) return { kind: "not_found" as const };
          if (current.status !== "DEAD")
            return { kind: "not_dead" as const, status: current.status };
          if (current.workflow_id !== null)
            return { kind: "workflow_node" as const, workflowId: current.workflow_id as string };
          await db.query(REPLAY_TASK, [tenantId, taskId, current.run_at_ms, nowMs, apiKeyId]);
          if (current.idempotency_key !== null) {
            await db.query(MOVE_IDEMPOTENCY_KEYS, [[tenantId], [current.idempotency_key], [nowMs]]);
          }
          return { kind: "replayed" as const, tenantId, taskId, runAtMs: nowMs };
        }),
      );
    } catch (error) {
      throw fromPgError(error, "replay task");
    }
  }

  async expireLeases(nowMs: number, limit: number): Promise<ExpiredLease[]> {
    try {
      return await this.withRetries(() =>
        this.transaction(async (db) => {
          const locked = await db.query(LOCK_EXPIRED, [nowMs, limit]);
          const failures = locked.rows.map((row: FailureRow) => {
            const failure: ExecutionFailure = {
              message: `the execution lease held by ${row.lease_owner ?? "?"} expired`,
              code: "lease_expired",
              retryable: true,
            };
            const decision = decideFailure(
              stateOf(row),
              { retryable: true, expired: true },
              nowMs,
              this.options.random,
            );
            return { row, decision, failure };
          });
          const settled = await this.settle(db, failures, nowMs);
          return settled.map(({ row, outcome }) => ({
            tenantId: row.tenant_id,
            taskId: row.id,
            outcome: outcome.kind as "retrying" | "dead" | "cancelled",
            nextRunAtMs: outcome.kind === "retrying" ? outcome.nextRunAtMs : null,
            released: "released" in outcome ? (outcome.released ?? []) : [],
          }));
        }),
      );
    } catch (error) {
      throw fromPgError(error, "expire execution leases");
    }
  }

  /** The coalesced starts of one event-loop turn: one statement; each caller gets its row or null. */
  private async startMany(inputs: StartInput[]): Promise<Array<Settled<Row | null>>> {
    const answers: Array<Settled<Row | null>> = [];
    // One statement per (worker, lease) — in practice one: a store serves one executor.
    for (const group of groupBy(inputs, (i) => `${i.leaseMs}|${i.workerId}`)) {
      const { workerId, leaseMs } = group[0]!;
      const refs = group.map((i) => i.ref);
      const result = await this.pool.query(START_MANY, [
        refs.map((r) => r.tenantId),
        refs.map((r) => r.taskId),
        refs.map((r) => r.fencingToken),
        refs.map((r) => r.runAtMs),
        workerId,
        group.map((i) => i.nowMs),
        leaseMs,
        ...runAtBounds(refs),
      ]);
      const rows = byIdAndToken(result.rows);
      for (const input of group)
        answers[inputs.indexOf(input)] = { ok: true, value: take(rows, input.ref) };
    }
    return answers;
  }

  /**
   * The coalesced completions of one event-loop turn. A result Postgres
   * refuses (a data exception) would fail the whole statement: then each row
   * goes alone, so only its own caller sees the refusal.
   */
  private async completeMany(inputs: CompleteInput[]): Promise<Array<Settled<DueEntry[] | null>>> {
    const once = (group: CompleteInput[]) =>
      this.transaction(async (db) => {
        const refs = group.map((i) => i.ref);
        const result = await db.query(COMPLETE_MANY, [
          refs.map((r) => r.tenantId),
          refs.map((r) => r.taskId),
          refs.map((r) => r.fencingToken),
          refs.map((r) => r.runAtMs),
          group.map((i) => i.resultJson),
          group.map((i) => i.nowMs),
          ...runAtBounds(refs),
        ]);
        // One release per completed workflow node, in this transaction, for all
        // the workflows of the batch (locked in id order).
        const released = await this.release(db, result.rows, group[0]!.nowMs);
        const rows = byIdAndToken(result.rows);
        return group.map((i): Settled<DueEntry[] | null> => {
          const row = take(rows, i.ref);
          return { ok: true, value: row ? (released.get(row.id) ?? []) : null };
        });
      });
    try {
      return await once(inputs);
    } catch (error) {
      if (!isDataException(error) || inputs.length === 1) throw error;
      return Promise.all(
        inputs.map((input) =>
          once([input]).then(
            (answers) => answers[0]!,
            (e: unknown): Settled<DueEntry[] | null> => ({ ok: false, error: e }),
          ),
        ),
      );
    }
  }

  /** Writes decided failures of rows locked by this transaction: tasks, dead letters, keys. */
  private async settle(
    db: Queryable,
    failures: ReadonlyArray<{
      row: FailureRow;
      decision: FailureDecision;
      failure: ExecutionFailure;
    }>,
    nowMs: number,
  ): Promise<Array<{ row: FailureRow; outcome: FailOutcome }>> {
    if (failures.length === 0) return [];
    const stopped = await this.lockWorkflows(
      db,
      failures.map((f) => f.row),
    );
    // A retry of a node whose workflow already failed (fail_fast) or was cancelled would run
    // a task nobody waits for: it is cancelled instead.
    const cancels = new Set(
      failures.filter((f) => f.decision.kind === "retry" && stopped.has(f.row.workflow_id ?? "")),
    );
    const settles = failures.filter((f) => !cancels.has(f));
    const errors = new Map(failures.map((f) => [f, lastErrorJson(f.row, f.failure, nowMs)]));
    const errorOf = (f: (typeof failures)[number]) => errors.get(f)!;
    if (settles.length > 0) {
      await db.query(SETTLE_FAILURES, [
        settles.map((f) => f.row.id),
        settles.map((f) => f.row.run_at_ms),
        settles.map((f) => (f.decision.kind === "retry" ? f.decision.nextRunAtMs : null)),
        settles.map(errorOf),
        nowMs,
      ]);
    }
    if (cancels.size > 0) {
      const cancelled = [...cancels];
      await db.query(CANCEL_FAILED, [
        cancelled.map((f) => f.row.id),
        cancelled.map((f) => f.row.run_at_ms),
        cancelled.map(errorOf),
        nowMs,
      ]);
    }
    const ended = failures.filter((f) => f.decision.kind !== "retry" || cancels.has(f));
    const released = await this.releaseLocked(
      db,
      ended.map((f) => f.row),
      nowMs,
    );
    const letters: unknown[] = [];
    const moved = failures.filter(
      (f) => f.decision.kind === "retry" && f.row.idempotency_key !== null,
    );
    const outcomes = failures.map((f) => {
      const { row, decision } = f;
      if (cancels.has(f)) {
        const outcome: FailOutcome = {
          kind: "cancelled",
          attempt: row.attempt,
          released: released.get(row.id) ?? [],
        };
        return { row, outcome };
      }
      if (decision.kind === "retry") {
        const outcome: FailOutcome = {
          kind: "retrying",
          attempt: row.attempt,
          nextRunAtMs: decision.nextRunAtMs,
          tenantId: row.tenant_id,
          taskId: row.id,
        };
        return { row, outcome };
      }
      const deadLetterId = this.options.newId();
      letters.push(deadLetterOf(deadLetterId, row, decision.reason, errorOf(f)));
      const outcome: FailOutcome = {
        kind: "dead",
        attempt: row.attempt,
        deadLetterId,
        released: released.get(row.id) ?? [],
      };
      return { row, outcome };
    });
    if (letters.length > 0) await db.query(INSERT_DEAD_LETTERS, [JSON.stringify(letters), nowMs]);
    if (moved.length > 0) {
      await db.query(MOVE_IDEMPOTENCY_KEYS, [
        moved.map((f) => f.row.tenant_id),
        moved.map((f) => f.row.idempotency_key),
        moved.map((f) => (f.decision as { nextRunAtMs: number }).nextRunAtMs),
      ]);
    }
    return outcomes;
  }

  /**
   * Locks the workflows of these rows (those in one), in id order, so two
   * transactions ending tasks of several workflows cannot deadlock; answers
   * the ids of those a node retry must not run in. The rows' own locks come
   * first: they are RUNNING tasks, which nothing under a workflow lock waits
   * for (the lock order of migrations/000007).
   */
  private async lockWorkflows(db: Queryable, rows: readonly TerminalRow[]): Promise<Set<string>> {
    const ids = [...new Set(rows.flatMap((r) => (r.workflow_id === null ? [] : [r.workflow_id])))];
    if (ids.length === 0) return new Set();
    const locked = await db.query(LOCK_WORKFLOWS, [ids.sort()]);
    return new Set(locked.rows.filter((w) => w.stopped).map((w) => w.id as string));
  }

  /** The DAG releaser for the rows (now terminal, in this transaction) that are workflow nodes. */
  private async release(
    db: Queryable,
    rows: readonly TerminalRow[],
    nowMs: number,
  ): Promise<Map<string, DueEntry[]>> {
    await this.lockWorkflows(db, rows);
    return this.releaseLocked(db, rows, nowMs);
  }

  private async releaseLocked(
    db: Queryable,
    rows: readonly TerminalRow[],
    nowMs: number,
  ): Promise<Map<string, DueEntry[]>> {
    const released = new Map<string, DueEntry[]>();
    for (const row of rows) {
      if (row.workflow_id === null) continue;
      const runAtMs = Math.round(row.run_at_ms);
      const outcome = await releaseDependents(db, { taskId: row.id, runAtMs }, nowMs);
      released.set(row.id, outcome.released);
    }
    return released;
  }

  /**
   * Runs a fenced call: `attempt` answers null for "0 rows", which becomes
   * `stale` or `not_found` after one more look (inside the same transaction
   * under row-level security). Malformed ids and tokens can match nothing.
   */
  private async fenced<T>(
    ref: ExecutionRef,
    operation: string,
    attempt: (db: Queryable) => Promise<T | null>,
    needsTransaction = false,
  ): Promise<T | { kind: "stale" } | { kind: "not_found" }> {
    if (!UUID.test(ref.taskId) || !UUID.test(ref.tenantId)) return { kind: "not_found" };
    const badRunAt = ref.runAtMs !== undefined && Number.isNaN(new Date(ref.runAtMs).getTime());
    if (!TOKEN.test(ref.fencingToken) || badRunAt) return this.staleOrMissing(ref, operation);
    const run = async (db: Queryable) => (await attempt(db)) ?? (await this.classify(db, ref));
    try {
      return await this.withRetries(() =>
        needsTransaction || this.options.rowLevelSecurity
          ? withTenant(this.pool, ref.tenantId, run)
          : run(this.pool),
      );
    } catch (error) {
      throw fromPgError(error, operation);
    }
  }

  private async staleOrMissing(ref: ExecutionRef, operation: string) {
    try {
      return this.options.rowLevelSecurity
        ? await withTenant(this.pool, ref.tenantId, (db) => this.classify(db, ref))
        : await this.classify(this.pool, ref);
    } catch (error) {
      throw fromPgError(error, operation);
    }
  }

  private async classify(db: Queryable, ref: ExecutionRef) {
    const found = await db.query(TASK_STATUS, [ref.tenantId, ref.taskId]);
    return found.rowCount === 0 ? { kind: "not_found" as const } : { kind: "stale" as const };
  }

  private async transaction<T>(fn: (db: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      const result = await fn(client);
      await client.query("COMMIT");
      client.release();
      return result;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      client.release(error instanceof Error ? error : true);
      throw error;
    }
  }

  /** A statement that waited on a row another transaction moved to another partition fails with 40001. */
  private async withRetries<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (error) {
        const code = (error as { code?: unknown } | null)?.code;
        // 40P01: two coalesced statements locked the same rows in opposite orders.
        if ((code !== "40001" && code !== "40P01") || attempt >= this.maxRetries) throw error;
      }
    }
  }
}

/** A task this transaction made terminal: enough to release its workflow's nodes. */
interface TerminalRow {
  id: string;
  run_at_ms: number;
  workflow_id: string | null;
}

interface FailureRow extends TerminalRow {
  tenant_id: string;
  type: string;
  payload_json: string;
  attempt: number;
  max_attempts: number;
  backoff_strategy: BackoffStrategy;
  backoff_base_ms: number;
  backoff_max_ms: number;
  idempotency_key: string | null;
  fencing_token: string;
  lease_owner: string | null;
}

const hasRunAt = (ref: ExecutionRef): ref is ExecutionRef & { runAtMs: number } =>
  ref.runAtMs !== undefined;

const isoOf = (epochMs: number): string => new Date(epochMs).toISOString();

/** Plain bounds on run_at, so the planner prunes partitions of a coalesced statement. */
function runAtBounds(refs: ReadonlyArray<{ runAtMs: number }>): [string, string] {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const r of refs) {
    if (r.runAtMs < min) min = r.runAtMs;
    if (r.runAtMs > max) max = r.runAtMs;
  }
  return [isoOf(min), isoOf(max)];
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return [...groups.values()];
}

const byIdAndToken = (rows: Row[]): Map<string, Row> =>
  new Map(rows.map((row) => [`${row.id}:${row.token}`, row]));

/** A row answers one caller only: the same task twice in a batch starts once, the other is stale. */
function take(rows: Map<string, Row>, ref: ExecutionRef): Row | null {
  const key = `${ref.taskId.toLowerCase()}:${ref.fencingToken}`;
  const row = rows.get(key) ?? null;
  rows.delete(key);
  return row;
}

const withRunAt = (ref: ExecutionRef): 0 | 1 => (ref.runAtMs === undefined ? 0 : 1);
const withRunAtParam = (ref: ExecutionRef, params: unknown[]): unknown[] =>
  ref.runAtMs === undefined ? params : [...params, isoOf(ref.runAtMs)];

const stateOf = (row: FailureRow) => ({
  attempt: row.attempt,
  maxAttempts: row.max_attempts,
  backoff: {
    strategy: row.backoff_strategy,
    baseMs: row.backoff_base_ms,
    maxMs: row.backoff_max_ms,
  },
});

/** tasks.last_error and dead_letters.error: the failure plus which attempt, when, and by whom. */
function lastErrorJson(row: FailureRow, failure: ExecutionFailure, nowMs: number): string {
  let details = failure.details;
  if (details !== undefined) {
    const text = JSON.stringify(details) ?? "null";
    if (text.length > MAX_DETAILS_CHARS) details = { truncated: text.slice(0, MAX_DETAILS_CHARS) };
  }
  return JSON.stringify({
    message: failure.message.slice(0, 4096),
    code: failure.code ?? null,
    retryable: failure.retryable,
    details: details ?? null,
    attempt: row.attempt,
    fencing_token: row.fencing_token,
    worker_id: row.lease_owner,
    at: new Date(nowMs).toISOString(),
  });
}

function deadLetterOf(id: string, row: FailureRow, reason: string, errorJson: string) {
  return {
    id,
    tenant_id: row.tenant_id,
    task_id: row.id,
    type: row.type,
    payload: JSON.parse(row.payload_json),
    attempt: row.attempt,
    max_attempts: row.max_attempts,
    fencing_token: row.fencing_token,
    error: JSON.parse(errorJson),
    reason,
    worker_id: row.lease_owner,
    run_at_ms: row.run_at_ms,
  };
}
