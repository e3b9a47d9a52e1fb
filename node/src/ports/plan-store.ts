import type { MisfirePolicy, OverlapPolicy } from "../domain/schedule.js";
import type { OccurrenceOutcome } from "../domain/schedule-plan.js";
import type { DueEntry } from "./hot-tier.js";

/** A schedule due for planning, with what its overlap policy needs to know. */
export interface DueSchedule {
  id: string;
  tenantId: string;
  expression: string;
  timeZone: string;
  misfirePolicy: MisfirePolicy;
  overlapPolicy: OverlapPolicy;
  jitterMs: number;
  version: number;
  plannedThroughMs: number;
  planShard: number;
  /** The latest occurrence that has a task is still in progress (only read when overlap ≠ allow). */
  previousInProgress: boolean;
  /** An occurrence is buffered, its task WAITING (only read for buffer_one). */
  buffered: boolean;
}

export interface OccurrenceRow {
  scheduleId: string;
  scheduledForMs: number;
  outcome: OccurrenceOutcome;
  /** Null exactly when the outcome is skipped_overlap. */
  taskId: string | null;
  runAtMs: number | null;
  catchUp: boolean;
}

export interface CursorRow {
  id: string;
  version: number;
  plannedThroughMs: number;
  nextOccurrenceMs: number | null;
}

export interface PlanLease {
  name: string;
  epoch: number;
}

/** Thrown by commit when a lease is no longer (owner, epoch): nothing was written. */
export class StalePlanLeaseError extends Error {
  constructor(readonly lease: string) {
    super(`planner lease ${lease} is no longer held`);
    this.name = "StalePlanLeaseError";
  }
}

/**
 * The planner's view of Postgres (as chronofence_planner: it works across
 * tenants). `nowMs` is always the planner's clock, passed in.
 */
export interface PlanStore {
  /**
   * Unpaused schedules of `shards` whose next occurrence is at or before
   * `allowUntilMs` (overlap allow) or `overlapUntilMs` (the others),
   * earliest first, at most `limit`.
   */
  dueSchedules(
    shards: readonly number[],
    allowUntilMs: number,
    overlapUntilMs: number,
    limit: number,
  ): Promise<DueSchedule[]>;
  /**
   * Writes the occurrences and cursors of one batch in one transaction,
   * fenced by the leases of the shards it covers, all of `owner`; skips
   * schedules changed since they were read, and occurrences that exist
   * already. Returns the SCHEDULED tasks it created (for the hot tier).
   */
  commit(
    owner: string,
    leases: readonly PlanLease[],
    cursors: readonly CursorRow[],
    occurrences: readonly OccurrenceRow[],
    nowMs: number,
  ): Promise<DueEntry[]>;
  /** Makes buffered tasks SCHEDULED (run_at = now) once nothing earlier is in progress. */
  releaseBuffered(
    leases: ReadonlyArray<{ shard: number; epoch: number }>,
    leasePrefix: string,
    owner: string,
    nowMs: number,
  ): Promise<DueEntry[]>;
}
