import type { DueEntry } from "../../ports/hot-tier.js";
import {
  type CursorRow,
  type DueSchedule,
  type OccurrenceRow,
  type PlanLease,
  type PlanStore,
  StalePlanLeaseError,
} from "../../ports/plan-store.js";
import { fromPgError } from "./errors.js";
import type { PgPool } from "./pool.js";
import { DUE_SCHEDULES, PLAN_OCCURRENCES, RELEASE_BUFFERED } from "./sql/plan.js";

/** SQLSTATE raised by cf_plan_occurrences when the planner's lease moved on. */
const STALE_LEASE = "CFL01";

export class PgPlanStore implements PlanStore {
  constructor(private readonly pool: PgPool) {}

  async dueSchedules(
    shard: number,
    allowUntilMs: number,
    overlapUntilMs: number,
    limit: number,
  ): Promise<DueSchedule[]> {
    try {
      const result = await this.pool.query(DUE_SCHEDULES, [
        shard,
        allowUntilMs,
        overlapUntilMs,
        limit,
      ]);
      return result.rows.map((row) => ({
        id: row.id,
        tenantId: row.tenant_id,
        expression: row.expression,
        timeZone: row.time_zone,
        misfirePolicy: row.misfire_policy,
        overlapPolicy: row.overlap_policy,
        jitterMs: row.jitter_ms,
        version: row.version,
        plannedThroughMs: Math.round(row.planned_through_ms),
        previousInProgress: row.previous_in_progress,
        buffered: row.buffered,
      }));
    } catch (error) {
      throw fromPgError(error, "due schedules");
    }
  }

  async commit(
    lease: PlanLease,
    cursors: readonly CursorRow[],
    occurrences: readonly OccurrenceRow[],
    nowMs: number,
  ): Promise<DueEntry[]> {
    const cursorJson = JSON.stringify(
      cursors.map((c) => ({
        id: c.id,
        version: c.version,
        planned_through_ms: c.plannedThroughMs,
        next_occurrence_ms: c.nextOccurrenceMs,
      })),
    );
    const occurrenceJson = JSON.stringify(
      occurrences.map((o) => ({
        schedule_id: o.scheduleId,
        scheduled_for_ms: o.scheduledForMs,
        outcome: o.outcome,
        task_id: o.taskId,
        run_at_ms: o.runAtMs,
        catch_up: o.catchUp,
      })),
    );
    try {
      const params = [cursorJson, occurrenceJson, lease.name, lease.owner, lease.epoch, nowMs];
      const result = await this.pool.query(PLAN_OCCURRENCES, params);
      return result.rows.map(toDueEntry);
    } catch (error) {
      if ((error as { code?: string }).code === STALE_LEASE)
        throw new StalePlanLeaseError(lease.name);
      throw fromPgError(error, "plan occurrences");
    }
  }

  async releaseBuffered(
    leases: ReadonlyArray<{ shard: number; epoch: number }>,
    leasePrefix: string,
    owner: string,
    nowMs: number,
  ): Promise<DueEntry[]> {
    if (leases.length === 0) return [];
    try {
      const result = await this.pool.query(RELEASE_BUFFERED, [
        leases.map((l) => l.shard),
        leasePrefix,
        owner,
        leases.map((l) => l.epoch),
        nowMs,
      ]);
      return result.rows.map(toDueEntry);
    } catch (error) {
      throw fromPgError(error, "release buffered");
    }
  }
}

const toDueEntry = (row: { task_id: string; tenant_id: string; run_at_ms: number }): DueEntry => ({
  taskId: row.task_id,
  tenantId: row.tenant_id,
  runAtMs: Math.round(row.run_at_ms),
});
