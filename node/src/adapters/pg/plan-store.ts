import type pg from "pg";
import { isInProgress } from "../../domain/schedule-plan.js";
import type { TaskStatus } from "../../domain/task.js";
import type { DueEntry } from "../../ports/hot-tier.js";
import {
  type CursorRow,
  type DueSchedule,
  type OccurrenceRow,
  type PlanLease,
  type PlanStore,
  StalePlanLeaseError,
} from "../../ports/plan-store.js";
import { dateOfMs, roundMs } from "./epoch-ms.js";
import { fromPgError } from "./errors.js";
import { type PgPool, withTransaction } from "./pool.js";
import {
  BUFFERED_IN_SHARDS,
  BUFFERED_OCCURRENCES,
  DUE_SCHEDULES,
  FENCED_SHARDS,
  MARK_RELEASED,
  PLAN_OCCURRENCES,
  PREVIOUS_OCCURRENCES,
  RELEASE_TASKS,
  TASK_STATES,
} from "./sql/plan.js";

/** SQLSTATE raised by cf_plan_occurrences when the planner's lease moved on. */
const STALE_LEASE = "CFL01";
/** The largest instant a JS Date holds (and within Postgres' timestamptz range). */
const FAR_FUTURE_MS = 8.64e15;

type Queryable = Pick<pg.PoolClient, "query">;

interface TaskRef {
  tenantId: string;
  taskId: string;
  runAtMs: number;
}

/** The planner's Postgres side, as the login role (across tenants). */
export class PgPlanStore implements PlanStore {
  constructor(private readonly pool: PgPool) {}

  async dueSchedules(
    shards: readonly number[],
    allowUntilMs: number,
    overlapUntilMs: number,
    limit: number,
  ): Promise<DueSchedule[]> {
    try {
      const params = [shards, allowUntilMs, overlapUntilMs, limit];
      const rows = (await this.pool.query(DUE_SCHEDULES, params)).rows;
      const due: DueSchedule[] = rows.map((row) => ({
        id: row.id,
        tenantId: row.tenant_id,
        expression: row.expression,
        timeZone: row.time_zone,
        misfirePolicy: row.misfire_policy,
        overlapPolicy: row.overlap_policy,
        jitterMs: row.jitter_ms,
        version: row.version,
        plannedThroughMs: roundMs(row.planned_through_ms),
        planShard: row.plan_shard,
        previousInProgress: false,
        buffered: false,
      }));
      await this.readOverlapFacts(due.filter((s) => s.overlapPolicy !== "allow"));
      return due;
    } catch (error) {
      throw fromPgError(error, "due schedules");
    }
  }

  async commit(
    owner: string,
    leases: readonly PlanLease[],
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
      const params = [
        cursorJson,
        occurrenceJson,
        leases.map((l) => l.name),
        owner,
        leases.map((l) => l.epoch),
        nowMs,
      ];
      const result = await this.pool.query(PLAN_OCCURRENCES, params);
      return result.rows.map(toDueEntry);
    } catch (error) {
      const { code, detail } = error as { code?: string; detail?: string };
      if (code === STALE_LEASE) throw new StalePlanLeaseError(detail ?? "");
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
      return await withTransaction(this.pool, (client) =>
        releaseIn(client, leases, leasePrefix, owner, nowMs),
      );
    } catch (error) {
      throw fromPgError(error, "release buffered");
    }
  }

  /** previousInProgress and buffered, for schedules whose overlap policy reads them. */
  private async readOverlapFacts(schedules: DueSchedule[]): Promise<void> {
    if (schedules.length === 0) return;
    const ids = schedules.map((s) => s.id);
    const previous = await previousRuns(
      this.pool,
      ids,
      ids.map(() => FAR_FUTURE_MS),
    );
    const buffered = (await this.pool.query(BUFFERED_OCCURRENCES, [ids])).rows.map((row) => ({
      scheduleId: row.schedule_id as string,
      tenantId: row.tenant_id as string,
      taskId: row.task_id as string,
      runAtMs: roundMs(row.run_at_ms),
    }));
    const states = await taskStates(this.pool, [...previous.values(), ...buffered]);
    for (const schedule of schedules) {
      const prev = previous.get(schedule.id);
      const state = prev && states.get(prev.taskId);
      schedule.previousInProgress =
        state !== undefined && isInProgress(state.status, state.attempt);
      schedule.buffered = buffered.some(
        (b) => b.scheduleId === schedule.id && states.get(b.taskId)?.status === "WAITING",
      );
    }
  }
}

/**
 * Buffered occurrences of the fenced shards whose previous run is not in
 * progress: their tasks become SCHEDULED, due now. Occurrences whose task
 * is no longer WAITING (cancelled meanwhile) stop being buffered too.
 */
async function releaseIn(
  client: Queryable,
  leases: ReadonlyArray<{ shard: number; epoch: number }>,
  leasePrefix: string,
  owner: string,
  nowMs: number,
): Promise<DueEntry[]> {
  const fenced = await client.query(FENCED_SHARDS, [
    leases.map((l) => l.shard),
    leases.map((l) => l.epoch),
    leasePrefix,
    owner,
    nowMs,
  ]);
  if (fenced.rowCount === 0) return [];
  const shards = fenced.rows.map((row: { shard: number }) => row.shard);
  const candidates = (await client.query(BUFFERED_IN_SHARDS, [shards])).rows.map((row) => ({
    scheduleId: row.schedule_id as string,
    scheduledForMs: row.scheduled_for_ms as number,
    tenantId: row.tenant_id as string,
    taskId: row.task_id as string,
    runAtMs: roundMs(row.run_at_ms),
  }));
  if (candidates.length === 0) return [];
  const previous = await previousRuns(
    client,
    candidates.map((c) => c.scheduleId),
    candidates.map((c) => c.scheduledForMs),
  );
  const states = await taskStates(client, [...previous.values(), ...candidates]);
  const ready = candidates.filter((c) => {
    const prev = previous.get(c.scheduleId);
    const state = prev && states.get(prev.taskId);
    return state === undefined || !isInProgress(state.status, state.attempt);
  });
  if (ready.length === 0) return [];
  const waiting = ready.filter((c) => states.get(c.taskId)?.status === "WAITING");
  const moved = (
    await client.query(RELEASE_TASKS, [
      waiting.map((c) => c.taskId),
      waiting.map((c) => dateOfMs(c.runAtMs)),
      nowMs,
      waiting.map((c) => c.tenantId),
    ])
  ).rows.map(toDueEntry);
  await client.query(MARK_RELEASED, [
    ready.map((c) => c.scheduleId),
    ready.map((c) => c.scheduledForMs),
    moved.map((m) => m.taskId),
    nowMs,
  ]);
  return moved;
}

/** For each schedule, its latest occurrence before the bound (same order) that has a task. */
async function previousRuns(
  db: Queryable,
  scheduleIds: string[],
  beforeMs: number[],
): Promise<Map<string, TaskRef>> {
  const rows = (await db.query(PREVIOUS_OCCURRENCES, [scheduleIds, beforeMs])).rows;
  return new Map(
    rows.map((row) => [
      row.schedule_id as string,
      {
        tenantId: row.tenant_id as string,
        taskId: row.task_id as string,
        runAtMs: roundMs(row.run_at_ms),
      },
    ]),
  );
}

async function taskStates(
  db: Queryable,
  refs: TaskRef[],
): Promise<Map<string, { status: TaskStatus; attempt: number }>> {
  if (refs.length === 0) return new Map();
  const result = await db.query(TASK_STATES, [
    refs.map((r) => r.taskId),
    refs.map((r) => dateOfMs(r.runAtMs)),
    refs.map((r) => r.tenantId),
  ]);
  return new Map(
    result.rows.map((row) => [row.id as string, { status: row.status, attempt: row.attempt }]),
  );
}

const toDueEntry = (row: {
  task_id?: string;
  id?: string;
  tenant_id: string;
  run_at_ms: number;
}): DueEntry => ({
  taskId: (row.task_id ?? row.id)!,
  tenantId: row.tenant_id,
  runAtMs: roundMs(row.run_at_ms),
});
