/**
 * What a chaos run records, and what the checker reads (checker.ts). A
 * history is facts observed from outside Chronofence — every request with its
 * answer and instant, every handler execution as the handler itself saw it —
 * plus two snapshots of the database taken after the run quiesced: before and
 * after one more reconciler pass. Times are epoch milliseconds of the
 * machine's clock (the nemesis may skew a node's own clock; the recorder does
 * not use it).
 */

/** How the workload meant a task to end, so the checker knows its expected terminal state. */
export type Intent = "succeed" | "fail_always" | "fail_then_succeed" | "slow";

export interface SubmittedTask {
  /** The id the API answered with (201, or 200 for an idempotent replay). */
  taskId: string;
  runAtMs: number;
  ackedAtMs: number;
  intent: Intent;
  idempotencyKey: string | null;
  workflowId: string | null;
}

export interface CancelRequest {
  taskId: string;
  sentAtMs: number;
  /**
   * The API's answer: 200 cancelled, 409 too late (running or terminal), 0 no
   * answer (the connection failed); anything but 200, 404 and 409 leaves the
   * outcome unknown: the cancel may or may not have committed.
   */
  status: number;
  /** The task's status in the 200 or 409 answer. */
  taskStatus: string | null;
}

/** One run of a handler, recorded by the handler outside Chronofence's tables. */
export interface Execution {
  taskId: string;
  fencingToken: string;
  attempt: number;
  node: string;
  startedAtMs: number;
  /** When the handler returned (or threw); null if its process died first. */
  finishedAtMs: number | null;
  /**
   * "ok" it returned; "threw" it failed on purpose (the workload's intent);
   * "aborted" its signal fired (timeout, lease lost, worker stopping); null
   * or absent: it never finished (its process died or the run ended first).
   */
  outcome?: "ok" | "threw" | "aborted" | null;
}

/** A workflow node's dependencies, as submitted. */
export interface WorkflowNode {
  workflowId: string;
  taskId: string;
  key: string;
  dependsOn: readonly string[];
  triggerRule: "all_success" | "all_done" | "one_success" | "one_failed" | "none_failed";
}

/** A task row as the database holds it after the run. */
export interface TaskRow {
  id: string;
  status: string;
  runAtMs: number;
  fencingToken: string | null;
  scheduleId: string | null;
  scheduledForMs: number | null;
  idempotencyKey: string | null;
  armedAtMs: number | null;
  startedAtMs: number | null;
  finishedAtMs: number | null;
  /** Compared by the reconciler rule too, when present: a pass that only bumps them still changed the row. */
  attempt?: number;
  leaseOwner?: string | null;
  updatedAt?: string;
}

/**
 * One change of a task's status or fencing token, from its transition history
 * (the chaos run records them with a trigger: observe.ts). `from` is "" for
 * the row's insert. The new row version's token, run_at and error code come
 * with it when the recorder knows them.
 */
export interface Transition {
  taskId: string;
  from: string;
  to: string;
  atMs: number;
  fencingToken?: string | null;
  runAtMs?: number;
  errorCode?: string | null;
}

/** A cron occurrence the run must see fire (its schedule's misfire policy is fire_all). */
export interface RequiredOccurrence {
  scheduleId: string;
  scheduledForMs: number;
}

export interface History {
  submitted: readonly SubmittedTask[];
  requiredOccurrences: readonly RequiredOccurrence[];
  cancels: readonly CancelRequest[];
  executions: readonly Execution[];
  workflowNodes: readonly WorkflowNode[];
  transitions: readonly Transition[];
  /** Every task row after the run quiesced. */
  tasks: readonly TaskRow[];
  /** The same rows after one more reconciler pass: it must change nothing. */
  tasksAfterReconcile: readonly TaskRow[];
}
