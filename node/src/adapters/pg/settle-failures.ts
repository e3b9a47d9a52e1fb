/**
 * Writes decided failures of RUNNING rows locked by the caller's transaction
 * (a worker's fenced fail, the reconciler's expired leases): the tasks
 * retried, dead or cancelled, their dead letters, their idempotency keys
 * moved with a retried run_at, and their workflows' releases.
 */
import type { FailureDecision, RetryState } from "../../domain/retry.js";
import type { BackoffStrategy } from "../../domain/task.js";
import type { ExecutionFailure, FailOutcome } from "../../ports/execution-store.js";
import { isoOfMs } from "./epoch-ms.js";
import type { Queryable } from "./fenced-calls.js";
import { lockWorkflows, releaseLocked, type TerminalRow } from "./release-terminal.js";
import {
  CANCEL_FAILED,
  INSERT_DEAD_LETTERS,
  MOVE_IDEMPOTENCY_KEYS,
  SETTLE_FAILURES,
} from "./sql/execution.js";

/** A row of sql/execution.ts FAILURE_COLUMNS. */
export interface FailureRow extends TerminalRow {
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

export interface DecidedFailure {
  row: FailureRow;
  decision: FailureDecision;
  failure: ExecutionFailure;
  /** The attempt does not count: tasks.attempt goes back by one (domain/retry.ts decideInterrupted). */
  givenBack?: boolean;
}

const MAX_DETAILS_CHARS = 16_384;

export async function settleFailures(
  db: Queryable,
  failures: readonly DecidedFailure[],
  nowMs: number,
  newId: () => string,
): Promise<Array<{ row: FailureRow; outcome: FailOutcome }>> {
  if (failures.length === 0) return [];
  const stopped = await lockWorkflows(
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
  const errorOf = (f: DecidedFailure) => errors.get(f)!;
  if (settles.length > 0) {
    await db.query(SETTLE_FAILURES, [
      settles.map((f) => f.row.id),
      settles.map((f) => f.row.run_at_ms),
      settles.map((f) => (f.decision.kind === "retry" ? f.decision.nextRunAtMs : null)),
      settles.map(errorOf),
      nowMs,
      settles.map((f) => (f.givenBack === true ? f.row.attempt - 1 : f.row.attempt)),
      settles.map((f) => f.row.tenant_id),
    ]);
  }
  if (cancels.size > 0) {
    const cancelled = [...cancels];
    await db.query(CANCEL_FAILED, [
      cancelled.map((f) => f.row.id),
      cancelled.map((f) => f.row.run_at_ms),
      cancelled.map(errorOf),
      nowMs,
      cancelled.map((f) => f.row.tenant_id),
    ]);
  }
  const ended = failures.filter((f) => f.decision.kind !== "retry" || cancels.has(f));
  const released = await releaseLocked(
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
    const deadLetterId = newId();
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

/** The retry policy state of a locked row, for domain/retry.ts decideFailure. */
export const retryStateOf = (row: FailureRow): RetryState => ({
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
    at: isoOfMs(nowMs),
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
