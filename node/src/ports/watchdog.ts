import type { TaskStatus } from "../domain/task.js";

/** What the watchdog reads and writes through the public API, as a user would. */
export interface WatchdogApi {
  /** Submits a canary task due `delayMs` later; returns its id. */
  submitCanary(type: string, delayMs: number): Promise<string>;
  taskStatus(taskId: string): Promise<TaskStatus>;
  /** Every schedule of the tenant that has `expect_within_ms`. */
  watchedSchedules(): Promise<WatchedScheduleView[]>;
  history(
    scheduleId: string,
    limit: number,
  ): Promise<Array<{ scheduledForMs: number; status: TaskStatus | null }>>;
}

export interface WatchedScheduleView {
  id: string;
  name: string;
  expression: string;
  timeZone: string;
  jitterMs: number;
  expectWithinMs: number;
  paused: boolean;
  createdAtMs: number;
  updatedAtMs: number;
}

/** One alert: `key` identifies it across firing and resolving (`canary`, `schedule:<id>`). */
export interface Alert {
  key: string;
  kind: "canary" | "dead_mans_switch";
  message: string;
  details: Record<string, unknown>;
}

/** Where alerts go (log line, webhook, gauge). Called on transitions only. */
export interface AlertSink {
  fire(alert: Alert): Promise<void>;
  resolve(alert: Alert): Promise<void>;
}
