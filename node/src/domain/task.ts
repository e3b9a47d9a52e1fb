/**
 * The task state machine (docs/architecture.md section 3).
 *
 *   WAITING ──► SCHEDULED ──► ARMED ──► RUNNING ──► COMPLETED
 *      │            ▲  │        │          │
 *      │            │  │        │          ├──► SCHEDULED (a failure with attempts left: later run_at)
 *      │            │  │        │          └──► DEAD (retries exhausted, or not retryable)
 *      └──► SKIPPED └──┴────────┴──► CANCELLED (only before RUNNING)
 *
 * A failure moves RUNNING to SCHEDULED or DEAD in one statement: FAILED is a
 * valid value of the column but no transition stores it. Replay (DEAD →
 * SCHEDULED, an operator's request) is the one deliberate way back.
 *
 * Ground rules: terminal states (COMPLETED, DEAD, CANCELLED, SKIPPED) never
 * move back; only a holder of the current fencing token may move a task to
 * RUNNING or to a terminal state (enforced by the SQL that performs it).
 */
export const TASK_STATUSES = [
  "WAITING",
  "SCHEDULED",
  "ARMED",
  "RUNNING",
  "COMPLETED",
  "FAILED",
  "DEAD",
  "CANCELLED",
  "SKIPPED",
] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const TERMINAL_STATUSES: ReadonlySet<TaskStatus> = new Set([
  "COMPLETED",
  "DEAD",
  "CANCELLED",
  "SKIPPED",
]);

/** A task may be cancelled until a worker starts it. */
export const CANCELLABLE_STATUSES: readonly TaskStatus[] = ["WAITING", "SCHEDULED", "ARMED"];

export const isCancellable = (status: TaskStatus): boolean => CANCELLABLE_STATUSES.includes(status);

export const PRIORITIES = ["critical", "standard", "bulk"] as const;
export type Priority = (typeof PRIORITIES)[number];

export const BACKOFF_STRATEGIES = ["exponential", "fixed"] as const;
export type BackoffStrategy = (typeof BACKOFF_STRATEGIES)[number];

export interface BackoffPolicy {
  strategy: BackoffStrategy;
  baseMs: number;
  maxMs: number;
}

/** A validated submission, ready to be stored. Times are epoch milliseconds. */
export interface TaskDraft {
  id: string;
  tenantId: string;
  type: string;
  /** The payload already serialised as JSON text (what Postgres stores as jsonb). */
  payloadJson: string;
  priority: Priority;
  runAtMs: number;
  maxAttempts: number;
  timeoutMs: number;
  backoff: BackoffPolicy;
  idempotencyKey: string | null;
  createdAtMs: number;
}

/** A task as stored (the columns this issue reads back; later roles add more). */
export interface Task {
  id: string;
  tenantId: string;
  type: string;
  payload: unknown;
  priority: Priority;
  status: TaskStatus;
  runAtMs: number;
  attempt: number;
  maxAttempts: number;
  timeoutMs: number;
  backoff: BackoffPolicy;
  idempotencyKey: string | null;
  fencingToken: string | null;
  result: unknown;
  lastError: unknown;
  workflowId: string | null;
  scheduleId: string | null;
  createdAtMs: number;
  updatedAtMs: number;
  cancelledAtMs: number | null;
  finishedAtMs: number | null;
}

/** The task a draft becomes when it is stored: SCHEDULED, no attempt yet. */
export function taskOfDraft(draft: TaskDraft, payload: unknown): Task {
  return {
    id: draft.id,
    tenantId: draft.tenantId,
    type: draft.type,
    payload,
    priority: draft.priority,
    status: "SCHEDULED",
    runAtMs: draft.runAtMs,
    attempt: 0,
    maxAttempts: draft.maxAttempts,
    timeoutMs: draft.timeoutMs,
    backoff: draft.backoff,
    idempotencyKey: draft.idempotencyKey,
    fencingToken: null,
    result: null,
    lastError: null,
    workflowId: null,
    scheduleId: null,
    createdAtMs: draft.createdAtMs,
    updatedAtMs: draft.createdAtMs,
    cancelledAtMs: null,
    finishedAtMs: null,
  };
}
