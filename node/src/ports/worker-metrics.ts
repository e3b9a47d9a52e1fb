/** What the worker role reports; the metrics adapter turns it into Prometheus series. */
export type WorkerOutcome =
  | "completed"
  | "retrying"
  /** A running attempt the worker's stop interrupted, recorded for an immediate retry. */
  | "interrupted"
  | "dead"
  | "cancelled"
  | "stale"
  | "lost_lease";
/** Where a stale fencing token was refused. */
export type StaleAt = "start" | "heartbeat" | "complete" | "fail" | "interrupt";

export interface WorkerMetrics {
  /** From the task's run_at to its fenced start, by queue (the topic it came from). */
  started(queue: string, latenessMs: number): void;
  /** Handler run time by task type. */
  ran(type: string, durationMs: number): void;
  outcome(type: string, outcome: WorkerOutcome): void;
  staleToken(at: StaleAt): void;
  retried(type: string): void;
  deadLettered(type: string): void;
  inFlight(tenantId: string, delta: 1 | -1): void;
  /** Messages that were not envelopes (skipped and committed). */
  malformed(queue: string): void;
  /** A Postgres/Kafka call that failed and is being retried. */
  dependencyRetry(what: string): void;
  /** A queue's consumer joined its group (true) or crashed and awaits its restart (false). */
  consumerUp(queue: string, up: boolean): void;
}

export const noWorkerMetrics: WorkerMetrics = {
  started: () => undefined,
  ran: () => undefined,
  outcome: () => undefined,
  staleToken: () => undefined,
  retried: () => undefined,
  deadLettered: () => undefined,
  inFlight: () => undefined,
  malformed: () => undefined,
  dependencyRetry: () => undefined,
  consumerUp: () => undefined,
};
