import type pg from "pg";
import { planShardOf, type Schedule } from "../../domain/schedule.js";
import { CANCELLABLE_STATUSES } from "../../domain/task.js";
import type {
  Actor,
  OccurrenceRecord,
  ScheduleChange,
  ScheduleStore,
  ScheduleUpdated,
} from "../../ports/schedule-store.js";
import { dateOfMs, roundMs, roundMsOrNull } from "./epoch-ms.js";
import { fromPgError } from "./errors.js";
import { type PgPool, withTenant } from "./pool.js";
import { TASK_STATES } from "./sql/plan.js";
import {
  AUDIT,
  CANCEL_TASKS,
  DELETE_SCHEDULE,
  FORGET_OCCURRENCES,
  FUTURE_OCCURRENCES,
  GET_SCHEDULE,
  INSERT_SCHEDULE,
  LIST_SCHEDULES,
  LOCK_SCHEDULE,
  OCCURRENCE_HISTORY,
  UPDATE_SCHEDULE,
} from "./sql/schedules.js";

/** The Postgres ScheduleStore (API side: the chronofence_api role, tenant-scoped). */
export class PgScheduleStore implements ScheduleStore {
  constructor(private readonly pool: PgPool) {}

  async create(actor: Actor, schedule: Schedule, nowMs: number): Promise<boolean> {
    return this.run(actor.tenantId, "create schedule", async (client) => {
      const params = [
        schedule.id,
        schedule.tenantId,
        ...fieldsOf(schedule),
        planShardOf(schedule.id),
        schedule.plannedThroughMs,
        schedule.nextOccurrenceMs,
        nowMs,
      ];
      const inserted = await client.query(INSERT_SCHEDULE, params);
      if (inserted.rowCount === 0) return false;
      await audit(client, actor, "schedule.create", [], { schedule_id: schedule.id }, nowMs);
      return true;
    });
  }

  get(tenantId: string, id: string): Promise<Schedule | null> {
    return this.run(tenantId, "get schedule", async (client) => {
      const result = await client.query(GET_SCHEDULE, [tenantId, id]);
      return result.rows[0] ? toSchedule(result.rows[0]) : null;
    });
  }

  list(tenantId: string, afterId: string | null, limit: number): Promise<Schedule[]> {
    return this.run(tenantId, "list schedules", async (client) => {
      const result = await client.query(LIST_SCHEDULES, [tenantId, afterId, limit]);
      return result.rows.map(toSchedule);
    });
  }

  history(tenantId: string, id: string, limit: number): Promise<OccurrenceRecord[]> {
    return this.run(tenantId, "schedule history", async (client) => {
      const rows = (await client.query(OCCURRENCE_HISTORY, [id, limit])).rows;
      const withTask = rows.filter((row) => row.task_id !== null);
      const states = await client.query(TASK_STATES, [
        withTask.map((row) => row.task_id),
        withTask.map((row) => dateOfMs(roundMs(row.run_at_ms))),
        [tenantId],
      ]);
      const stateOf = new Map(states.rows.map((row) => [row.id as string, row]));
      return rows.map((row) => ({
        scheduledForMs: roundMs(row.scheduled_for_ms),
        outcome: row.outcome,
        catchUp: row.catch_up,
        taskId: row.task_id,
        runAtMs: roundMsOrNull(row.run_at_ms),
        status: stateOf.get(row.task_id)?.status ?? null,
        attempt: stateOf.get(row.task_id)?.attempt ?? null,
      }));
    });
  }

  update(
    actor: Actor,
    id: string,
    nowMs: number,
    decide: (current: Schedule) => ScheduleChange,
  ): Promise<ScheduleUpdated | null> {
    return this.run(actor.tenantId, "update schedule", async (client) => {
      const locked = await client.query(LOCK_SCHEDULE, [actor.tenantId, id]);
      if (!locked.rows[0]) return null;
      const change = decide(toSchedule(locked.rows[0]));
      let cancelledTaskIds: string[] = [];
      if (change.replanAfterMs !== null) {
        cancelledTaskIds = await cancelFuture(
          client,
          actor.tenantId,
          id,
          change.replanAfterMs,
          nowMs,
        );
      }
      const s = change.next;
      const updated = await client.query(UPDATE_SCHEDULE, [
        actor.tenantId,
        id,
        ...fieldsOf(s),
        s.plannedThroughMs,
        s.nextOccurrenceMs,
        nowMs,
      ]);
      const details = { schedule_id: id, changed: change.changed };
      await audit(client, actor, "schedule.update", cancelledTaskIds, details, nowMs);
      return { schedule: toSchedule(updated.rows[0]), cancelledTaskIds };
    });
  }

  delete(actor: Actor, id: string, nowMs: number): Promise<{ cancelledTaskIds: string[] } | null> {
    return this.run(actor.tenantId, "delete schedule", async (client) => {
      const locked = await client.query(LOCK_SCHEDULE, [actor.tenantId, id]);
      if (!locked.rows[0]) return null;
      const cancelledTaskIds = await cancelFuture(client, actor.tenantId, id, null, nowMs);
      await client.query(DELETE_SCHEDULE, [actor.tenantId, id]);
      await audit(client, actor, "schedule.delete", cancelledTaskIds, { schedule_id: id }, nowMs);
      return { cancelledTaskIds };
    });
  }

  private async run<T>(
    tenantId: string,
    operation: string,
    fn: (client: pg.PoolClient) => Promise<T>,
  ): Promise<T> {
    try {
      return await withTenant(this.pool, tenantId, fn);
    } catch (error) {
      throw fromPgError(error, operation);
    }
  }
}

/**
 * Cancels the unstarted tasks of the schedule's occurrences after `afterMs`
 * (all when null) and forgets those occurrences and the ones without a
 * task. A started occurrence keeps its row: it stays the one execution of
 * that occurrence. Returns the ids cancelled.
 */
async function cancelFuture(
  client: pg.PoolClient,
  tenantId: string,
  id: string,
  afterMs: number | null,
  nowMs: number,
): Promise<string[]> {
  const future = (await client.query(FUTURE_OCCURRENCES, [tenantId, id, afterMs])).rows;
  const withTask = future.filter((row) => row.task_id !== null);
  const cancelled = await client.query(CANCEL_TASKS, [
    withTask.map((row) => row.task_id),
    withTask.map((row) => dateOfMs(roundMs(row.run_at_ms))),
    nowMs,
    CANCELLABLE_STATUSES,
    tenantId,
  ]);
  const cancelledIds = new Set(cancelled.rows.map((row: { id: string }) => row.id));
  const forget = future.filter((row) => row.task_id === null || cancelledIds.has(row.task_id));
  await client.query(FORGET_OCCURRENCES, [id, forget.map((row) => row.scheduled_for_ms)]);
  return [...cancelledIds];
}

function audit(
  client: pg.PoolClient,
  actor: Actor,
  action: string,
  taskIds: string[],
  details: Record<string, unknown>,
  nowMs: number,
) {
  const withRequest = { ...details, request_id: actor.requestId };
  const params = [actor.tenantId, actor.apiKeyId, action, taskIds, withRequest, nowMs];
  return client.query(AUDIT, params);
}

/** $3..$18 of INSERT_SCHEDULE and UPDATE_SCHEDULE. */
function fieldsOf(s: Schedule): unknown[] {
  return [
    s.name,
    s.expression,
    s.timeZone,
    s.type,
    s.payloadJson,
    s.priority,
    s.maxAttempts,
    s.timeoutMs,
    s.backoff.strategy,
    s.backoff.baseMs,
    s.backoff.maxMs,
    s.misfirePolicy,
    s.overlapPolicy,
    s.jitterMs,
    s.expectWithinMs,
    s.paused,
  ];
}

interface ScheduleRow {
  id: string;
  tenant_id: string;
  name: string;
  expression: string;
  time_zone: string;
  type: string;
  payload: unknown;
  priority: Schedule["priority"];
  max_attempts: number;
  timeout_ms: number;
  backoff_strategy: Schedule["backoff"]["strategy"];
  backoff_base_ms: number;
  backoff_max_ms: number;
  misfire_policy: Schedule["misfirePolicy"];
  overlap_policy: Schedule["overlapPolicy"];
  jitter_ms: number;
  expect_within_ms: number | null;
  paused: boolean;
  version: number;
  planned_through_ms: number;
  next_occurrence_ms: number | null;
  created_at_ms: number;
  updated_at_ms: number;
}

function toSchedule(row: ScheduleRow): Schedule {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    name: row.name,
    expression: row.expression,
    timeZone: row.time_zone,
    type: row.type,
    payload: row.payload,
    payloadJson: JSON.stringify(row.payload),
    priority: row.priority,
    maxAttempts: row.max_attempts,
    timeoutMs: row.timeout_ms,
    backoff: {
      strategy: row.backoff_strategy,
      baseMs: row.backoff_base_ms,
      maxMs: row.backoff_max_ms,
    },
    misfirePolicy: row.misfire_policy,
    overlapPolicy: row.overlap_policy,
    jitterMs: row.jitter_ms,
    expectWithinMs: row.expect_within_ms,
    paused: row.paused,
    version: row.version,
    plannedThroughMs: roundMs(row.planned_through_ms),
    nextOccurrenceMs: roundMsOrNull(row.next_occurrence_ms),
    createdAtMs: roundMs(row.created_at_ms),
    updatedAtMs: roundMs(row.updated_at_ms),
  };
}
