import type { Schedule } from "../domain/schedule.js";
import type { OccurrenceOutcome } from "../domain/schedule-plan.js";
import type { TaskStatus } from "../domain/task.js";

/** Who asked, for the audit log. */
export interface Actor {
  tenantId: string;
  apiKeyId: string;
  requestId: string;
}

/** One occurrence in a schedule's history. */
export interface OccurrenceRecord {
  scheduledForMs: number;
  outcome: OccurrenceOutcome | "released";
  catchUp: boolean;
  taskId: string | null;
  runAtMs: number | null;
  /** Null when there is no task, or its partition was dropped by retention. */
  status: TaskStatus | null;
  attempt: number | null;
}

/**
 * A change decided by the caller from the locked current row: the new row,
 * and whether future occurrences must be re-planned — their unstarted tasks
 * cancelled and forgotten — from `replanAfterMs` on.
 */
export interface ScheduleChange {
  next: Schedule;
  replanAfterMs: number | null;
  /** Audit details (which fields changed). */
  changed: string[];
}

export interface ScheduleUpdated {
  schedule: Schedule;
  cancelledTaskIds: string[];
}

/**
 * Cron schedules of the API, scoped to the tenant of every call (row-level
 * security too). Each mutation writes its audit row in its own transaction.
 */
export interface ScheduleStore {
  /** False when the tenant already has a schedule of that name. */
  create(actor: Actor, schedule: Schedule, nowMs: number): Promise<boolean>;
  get(tenantId: string, id: string): Promise<Schedule | null>;
  list(tenantId: string, afterId: string | null, limit: number): Promise<Schedule[]>;
  history(tenantId: string, id: string, limit: number): Promise<OccurrenceRecord[]>;
  /** Null when unknown. `decide` runs with the row locked and may throw to abort. */
  update(
    actor: Actor,
    id: string,
    nowMs: number,
    decide: (current: Schedule) => ScheduleChange,
  ): Promise<ScheduleUpdated | null>;
  /** Cancels every unstarted occurrence, then deletes; null when unknown. */
  delete(actor: Actor, id: string, nowMs: number): Promise<{ cancelledTaskIds: string[] } | null>;
}
