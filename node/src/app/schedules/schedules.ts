/**
 * The schedule use cases of the API: create, read (with history), change
 * (pause, resume, edit) and delete — always within the caller's tenant.
 * Changing when or what a schedule runs cancels its occurrences not yet
 * started and lets the planner plan them again from the new definition.
 */
import { CronSchedule } from "../../domain/cron.js";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import {
  REPLAN_FIELDS,
  type Schedule,
  type SchedulePatch,
  validateScheduleCreate,
  validateSchedulePatch,
  validateSchedulePatchAlone,
} from "../../domain/schedule.js";
import type { Principal } from "../../domain/tenant.js";
import { isUuid } from "../../domain/uuid.js";
import type { CancelNotifier } from "../../ports/cancel-notifier.js";
import type { Clock } from "../../ports/clock.js";
import type {
  Actor,
  OccurrenceRecord,
  ScheduleChange,
  ScheduleStore,
} from "../../ports/schedule-store.js";

export const DEFAULT_HISTORY = 20;
export const MAX_HISTORY = 500;
const DEFAULT_PAGE = 100;
const MAX_PAGE = 1000;

export interface ScheduleView {
  schedule: Schedule;
  history: OccurrenceRecord[];
}

export class ScheduleService {
  constructor(
    private readonly store: ScheduleStore,
    private readonly notifier: CancelNotifier,
    private readonly clock: Clock,
    private readonly newId: () => string,
  ) {}

  async create(principal: Principal, body: unknown, requestId: string): Promise<Schedule> {
    const { spec, payload } = validateScheduleCreate(body, principal.limits);
    const nowMs = this.clock.nowMs();
    const cron = CronSchedule.parse(spec.expression, spec.timeZone);
    const schedule: Schedule = {
      ...spec,
      id: this.newId(),
      tenantId: principal.tenantId,
      payload,
      version: 1,
      plannedThroughMs: nowMs,
      nextOccurrenceMs: cron.nextAfter(nowMs),
      createdAtMs: nowMs,
      updatedAtMs: nowMs,
    };
    if (!(await this.store.create(actorOf(principal, requestId), schedule, nowMs))) {
      throw new ChronofenceError(ErrorCode.NameTaken, "a schedule with this name exists", {
        details: { name: spec.name },
      });
    }
    return schedule;
  }

  async get(principal: Principal, id: string, historyParam: string | null): Promise<ScheduleView> {
    const limit = historyLimitOf(historyParam);
    const schedule = isUuid(id) ? await this.store.get(principal.tenantId, id) : null;
    if (!schedule) throw notFound(id);
    const history = limit === 0 ? [] : await this.store.history(principal.tenantId, id, limit);
    return { schedule, history };
  }

  async list(
    principal: Principal,
    cursor: string | null,
    limitParam: string | null,
  ): Promise<{ schedules: Schedule[]; nextCursor: string | null }> {
    if (cursor !== null && !isUuid(cursor)) throw badQuery("cursor", cursor);
    const limit = limitParam === null ? DEFAULT_PAGE : Number(limitParam);
    if (limitParam !== null && (!/^\d{1,4}$/.test(limitParam) || limit < 1 || limit > MAX_PAGE)) {
      throw badQuery("limit", limitParam);
    }
    const rows = await this.store.list(principal.tenantId, cursor, limit + 1);
    const page = rows.slice(0, limit);
    return { schedules: page, nextCursor: rows.length > limit ? page[page.length - 1]!.id : null };
  }

  async update(principal: Principal, id: string, body: unknown, requestId: string) {
    if (!isUuid(id)) throw notFound(id);
    validateSchedulePatchAlone(body, principal.limits); // before the row lock
    const nowMs = this.clock.nowMs();
    const updated = await this.store.update(actorOf(principal, requestId), id, nowMs, (current) =>
      changeOf(current, validateSchedulePatch(body, current, principal.limits), nowMs),
    );
    if (!updated) throw notFound(id);
    this.notify(principal.tenantId, updated.cancelledTaskIds);
    return updated;
  }

  async delete(principal: Principal, id: string, requestId: string) {
    if (!isUuid(id)) throw notFound(id);
    const deleted = await this.store.delete(actorOf(principal, requestId), id, this.clock.nowMs());
    if (!deleted) throw notFound(id);
    this.notify(principal.tenantId, deleted.cancelledTaskIds);
    return deleted;
  }

  /** Best effort, after the commit: a cancelled task can no longer be armed or started. */
  private notify(tenantId: string, taskIds: string[]): void {
    for (const taskId of taskIds) this.notifier.cancelled(tenantId, taskId).catch(() => undefined);
  }
}

/**
 * The new row for a validated patch. Pausing, or changing a field of
 * REPLAN_FIELDS, re-plans from now on; resuming skips what fell due while
 * paused (it was not missed, it was paused).
 */
export function changeOf(
  current: Schedule,
  validated: { patch: SchedulePatch; payload?: unknown },
  nowMs: number,
): ScheduleChange {
  const { patch } = validated;
  const next: Schedule = { ...current, ...patch, updatedAtMs: nowMs };
  if ("payload" in validated) next.payload = validated.payload;
  const changed = (Object.keys(patch) as Array<keyof SchedulePatch>).filter(
    (key) => JSON.stringify(patch[key]) !== JSON.stringify(current[key]),
  );
  const replan =
    (next.paused && !current.paused) ||
    changed.some((key) => (REPLAN_FIELDS as readonly string[]).includes(key));
  if (replan) next.plannedThroughMs = Math.min(current.plannedThroughMs, nowMs);
  if (current.paused && !next.paused) {
    next.plannedThroughMs = Math.max(current.plannedThroughMs, nowMs);
  }
  next.nextOccurrenceMs = CronSchedule.parse(next.expression, next.timeZone).nextAfter(
    next.plannedThroughMs,
  );
  return { next, replanAfterMs: replan ? nowMs : null, changed };
}

function historyLimitOf(param: string | null): number {
  if (param === null) return DEFAULT_HISTORY;
  const limit = Number(param);
  if (!/^\d{1,4}$/.test(param) || limit > MAX_HISTORY) throw badQuery("history", param);
  return limit;
}

const actorOf = (principal: Principal, requestId: string): Actor => ({
  tenantId: principal.tenantId,
  apiKeyId: principal.apiKeyId,
  requestId,
});

const notFound = (id: string) =>
  new ChronofenceError(ErrorCode.NotFound, "schedule not found", {
    details: { schedule_id: id.slice(0, 64) },
  });

const badQuery = (field: string, value: string) =>
  new ChronofenceError(ErrorCode.InvalidRequest, `invalid query parameter ${field}`, {
    details: { field, value: value.slice(0, 64) },
  });
