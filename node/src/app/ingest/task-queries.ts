/** Reading and cancelling tasks, always within the caller's tenant. */
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import { TASK_TYPE_PATTERN } from "../../domain/submission.js";
import { TASK_STATUSES, type Task, type TaskStatus } from "../../domain/task.js";
import type { Principal } from "../../domain/tenant.js";
import { isUuid } from "../../domain/uuid.js";
import type { CancelNotifier } from "../../ports/cancel-notifier.js";
import type { Clock } from "../../ports/clock.js";
import type { ChangePosition, TaskFilter, TaskStore } from "../../ports/task-store.js";

export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 1000;

/**
 * The change feed (`order=updated_at`) looks at this many of a tenant's most
 * recently created tasks, no more: the bound on what one page costs
 * (docs/api.md, "The change feed").
 */
export const CHANGE_FEED_WINDOW_TASKS = 10_000;

export interface ListQuery {
  status?: string | undefined;
  type?: string | undefined;
  cursor?: string | undefined;
  limit?: string | undefined;
  /** `id` (default) or `updated_at` (the change feed). */
  order?: string | undefined;
  /** With order=updated_at: RFC 3339, exclusive. */
  updated_after?: string | undefined;
}

export interface TaskPage {
  tasks: Task[];
  /** Pass as `cursor` to get the next page; null on the last page. */
  nextCursor: string | null;
}

export class TaskQueries {
  constructor(
    private readonly store: TaskStore,
    private readonly clock: Clock,
    private readonly cancels: CancelNotifier,
  ) {}

  async get(principal: Principal, taskId: string): Promise<Task> {
    // A malformed id cannot exist: 404, like another tenant's id.
    const task = isUuid(taskId) ? await this.store.get(principal.tenantId, taskId) : null;
    if (!task) throw notFound(taskId);
    return task;
  }

  async list(principal: Principal, query: ListQuery): Promise<TaskPage> {
    const filter = parseListQuery(query);
    const tasks = await this.store.list(principal.tenantId, { ...filter, limit: filter.limit + 1 });
    const hasMore = tasks.length > filter.limit;
    const page = hasMore ? tasks.slice(0, filter.limit) : tasks;
    const last = page[page.length - 1];
    if (!hasMore || !last) return { tasks: page, nextCursor: null };
    return { tasks: page, nextCursor: filter.changes ? changeCursorOf(last) : last.id };
  }

  async cancel(principal: Principal, taskId: string): Promise<Task> {
    if (!isUuid(taskId)) throw notFound(taskId);
    const nowMs = this.clock.nowMs();
    const outcome = await this.store.cancel(principal.tenantId, taskId, principal.apiKeyId, nowMs);
    if (outcome.kind === "not_found") throw notFound(taskId);
    if (outcome.kind === "not_cancellable") {
      throw new ChronofenceError(
        ErrorCode.InvalidTransition,
        `a ${outcome.task.status} task cannot be cancelled`,
        { details: { task_id: taskId, status: outcome.task.status } },
      );
    }
    // Tells the shard's dispatcher to drop the task from its wheel. Not awaited, and a failure
    // is harmless: a cancelled task can no longer be armed, and a worker's fenced start refuses
    // one already published.
    this.cancels.cancelled(principal.tenantId, taskId).catch(() => undefined);
    return outcome.task;
  }
}

export function parseListQuery(query: ListQuery): TaskFilter {
  const filter: TaskFilter = { limit: DEFAULT_PAGE_LIMIT };
  if (query.status !== undefined) {
    if (!TASK_STATUSES.includes(query.status as TaskStatus)) throw badQuery("status", query.status);
    filter.status = query.status as TaskStatus;
  }
  if (query.type !== undefined) {
    // The same rule as at submission: no other type can exist, and a NUL would reach Postgres.
    if (!TASK_TYPE_PATTERN.test(query.type)) throw badQuery("type", query.type);
    filter.type = query.type;
  }
  if (query.order !== undefined && query.order !== "id" && query.order !== "updated_at") {
    throw badQuery("order", query.order);
  }
  if (query.order === "updated_at") {
    filter.changes = { after: changeStartOf(query), windowTasks: CHANGE_FEED_WINDOW_TASKS };
  } else if (query.updated_after !== undefined) {
    throw badQuery("updated_after", query.updated_after, "only with order=updated_at");
  } else if (query.cursor !== undefined) {
    if (!isUuid(query.cursor)) throw badQuery("cursor", query.cursor);
    filter.afterId = query.cursor;
  }
  if (query.limit !== undefined) {
    const limit = Number(query.limit);
    if (!/^\d{1,4}$/.test(query.limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
      throw badQuery("limit", query.limit);
    }
    filter.limit = limit;
  }
  return filter;
}

const notFound = (taskId: string) =>
  new ChronofenceError(ErrorCode.NotFound, "task not found", {
    details: { task_id: taskId.slice(0, 64) },
  });

/** The feed's cursor: `<updated_at ms>_<id>` of the last task of a page (opaque to clients). */
const changeCursorOf = (task: Task): string => `${task.updatedAtMs}_${task.id}`;
const CHANGE_CURSOR = /^(\d{1,15})_([0-9a-f-]{36})$/i;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
const NIL_UUID = "00000000-0000-0000-0000-000000000000";

/** Where a feed page starts: its cursor, else just after updated_after, else the beginning. */
function changeStartOf(query: ListQuery): ChangePosition {
  if (query.cursor !== undefined) {
    const match = CHANGE_CURSOR.exec(query.cursor);
    if (!match || !isUuid(match[2]!)) throw badQuery("cursor", query.cursor);
    return { updatedAtMs: Number(match[1]), id: match[2]! };
  }
  if (query.updated_after === undefined) return { updatedAtMs: 0, id: NIL_UUID };
  const text = query.updated_after.toUpperCase().replace(" ", "T");
  const ms = RFC3339.test(text) ? Date.parse(text) : Number.NaN;
  if (!Number.isFinite(ms)) {
    throw badQuery("updated_after", query.updated_after, "an RFC 3339 instant");
  }
  // Exclusive: after every id of the instant's last whole millisecond.
  return { updatedAtMs: Math.floor(ms), id: "ffffffff-ffff-ffff-ffff-ffffffffffff" };
}

const badQuery = (field: string, value: string, expected?: string) =>
  new ChronofenceError(
    ErrorCode.InvalidRequest,
    `invalid query parameter ${field}${expected ? `: ${expected}` : ""}`,
    { details: { field, value: value.slice(0, 64) } },
  );
