/**
 * Partition maintenance for `tasks` (statements in sql/partitions.ts, functions
 * in migrations/000002_partition_maintenance.sql). Dates are UTC days computed
 * from the caller's clock, so tests can drive retention with a fake clock.
 */
import { DAY_MS, utcDayOfMs } from "./epoch-ms.js";
import { fromPgError } from "./errors.js";
import type { PgPool } from "./pool.js";
import {
  ANALYZE_TASK_PARTITIONS,
  DROP_TASK_PARTITIONS,
  ENSURE_TASK_PARTITIONS,
} from "./sql/partitions.js";

export interface PartitionPlan {
  /** Create partitions for days from nowMs - retentionDays to nowMs + horizon + margin. */
  horizonMs: number;
  retentionDays: number;
}

export interface MaintenanceReport {
  created: number;
  dropped: string[];
  keptWithPendingTasks: string[];
}

export async function maintainTaskPartitions(
  pool: PgPool,
  plan: PartitionPlan,
  nowMs: number,
): Promise<MaintenanceReport> {
  // Two spare days: clocks differ between processes, and a task may be
  // accepted at the very end of the horizon just before midnight UTC.
  const fromDay = utcDayOfMs(nowMs - plan.retentionDays * DAY_MS);
  const toDay = utcDayOfMs(nowMs + plan.horizonMs + 2 * DAY_MS);
  const dropBefore = fromDay;
  try {
    const created = await pool.query(ENSURE_TASK_PARTITIONS, [fromDay, toDay]);
    const dropped = await pool.query(DROP_TASK_PARTITIONS, [dropBefore]);
    const rows = dropped.rows as Array<{ partition: string; dropped: boolean }>;
    return {
      created: created.rows[0].n,
      dropped: rows.filter((r) => r.dropped).map((r) => r.partition),
      keptWithPendingTasks: rows.filter((r) => !r.dropped).map((r) => r.partition),
    };
  } catch (error) {
    throw fromPgError(error, "partition maintenance");
  }
}

/**
 * Analyzes the partitions of yesterday, today and tomorrow (the days whose
 * tasks run now) that have rows but no statistics on run_at: without them,
 * the workers' batched statements get a plan that reads the whole day for
 * each batch (migrations/000021). Returns the partitions it analyzed.
 */
export async function analyzeHotTaskPartitions(pool: PgPool, nowMs: number): Promise<string[]> {
  try {
    const result = await pool.query(ANALYZE_TASK_PARTITIONS, [
      utcDayOfMs(nowMs - DAY_MS),
      utcDayOfMs(nowMs + DAY_MS),
    ]);
    return (result.rows as Array<{ partition: string }>).map((r) => r.partition);
  } catch (error) {
    throw fromPgError(error, "partition statistics");
  }
}
