/** Reading and cancelling tasks, always within the caller's tenant. */
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import { TASK_TYPE_PATTERN } from "../../domain/submission.js";
import { TASK_STATUSES, type Task, type TaskStatus } from "../../domain/task.js";
import type { Principal } from "../../domain/tenant.js";
import type { CancelNotifier } from "../../ports/cancel-notifier.js";
import type { Clock } from "../../ports/clock.js";
import type { TaskFilter, TaskStore } from "../../ports/task-store.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 1000;

export interface ListQuery {
  status?: string | undefined;
  type?: string | undefined;
  cursor?: string | undefined;
  limit?: string | undefined;
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
    const task = UUID.test(taskId) ? await this.store.get(principal.tenantId, taskId) : null;
    if (!task) throw notFound(taskId);
    return task;
  }

  async list(principal: Principal, query: ListQuery): Promise<TaskPage> {
    const filter = parseListQuery(query);
    const tasks = await this.store.list(principal.tenantId, { ...filter, limit: filter.limit + 1 });
    const hasMore = tasks.length > filter.limit;
    const page = hasMore ? tasks.slice(0, filter.limit) : tasks;
    return { tasks: page, nextCursor: hasMore ? page[page.length - 1]!.id : null };
  }

  async cancel(principal: Principal, taskId: string): Promise<Task> {
    if (!UUID.test(taskId)) throw notFound(taskId);
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
  if (query.cursor !== undefined) {
    if (!UUID.test(query.cursor)) throw badQuery("cursor", query.cursor);
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

const badQuery = (field: string, value: string) =>
  new ChronofenceError(ErrorCode.InvalidRequest, `invalid query parameter ${field}`, {
    details: { field, value: value.slice(0, 64) },
  });
