import type { MalformedReason } from "../domain/inbound-envelope.js";

export type { MalformedReason };

/** What the worker role reports; the metrics adapter turns it into Prometheus series. */
export type WorkerOutcome =
  | "completed"
  | "retrying"
  /** A running attempt the worker's stop interrupted, recorded for an immediate retry. */
  | "interrupted"
  | "dead"
  | "cancelled"
  | "stale"
  | "lost_lease"
  /** No handler for the type here: handed back for another worker, the attempt not counted. */
  | "handed_back"
  /** Delivered before its run_at by the database's clock: started again once due. */
  | "not_due"
  /** The start could not reach Postgres within CF_WORKER_START_MAX_RETRIES: left to the reconciler. */
  | "start_given_up";

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
  /** Messages that were not envelopes (skipped and committed), by why. */
  malformed(queue: string, reason: MalformedReason): void;
  /** An envelope whose type no handler here serves (alert on it: a rolling deployment, or a typo). */
  noHandler(type: string): void;
  /** A running attempt aborted because its lease could not be renewed before the local deadline. */
  leaseDeadlinePassed(): void;
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
  noHandler: () => undefined,
  leaseDeadlinePassed: () => undefined,
  dependencyRetry: () => undefined,
  consumerUp: () => undefined,
};
