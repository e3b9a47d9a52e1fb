/**
 * The dashboard's list reads that the task, schedule and workflow use cases
 * lack: a task search with more filters, the dead letters, the workflows;
 * and the watchdog's alert reports. Each parses its query or body with its
 * schema (dashboard-requests.ts) and pages by keyset, newest first.
 */
import type { Task } from "../../domain/task.js";
import type { Principal } from "../../domain/tenant.js";
import type { Clock } from "../../ports/clock.js";
import type {
  AlertReport,
  DashboardStore,
  DeadLetterRecord,
  TaskSearch,
  WorkflowSummary,
} from "../../ports/dashboard-store.js";
import {
  AlertReportRequest,
  DeadLetterListQuery,
  parseBody,
  TaskSearchQuery,
  WorkflowListQuery,
} from "./dashboard-requests.js";
import { parseQuery } from "./query-params.js";

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export class DashboardQueries {
  constructor(
    private readonly store: DashboardStore,
    private readonly clock: Clock,
  ) {}

  /** GET /v1/tasks/search: status, type, priority, run_at_from/run_at_to, id, idempotency_key, cursor, limit. */
  async searchTasks(principal: Principal, query: string): Promise<Page<Task>> {
    const q = parseQuery(TaskSearchQuery, query);
    const search: TaskSearch = { limit: q.limit + 1 };
    if (q.status) search.status = q.status;
    if (q.type) search.type = q.type;
    if (q.priority) search.priority = q.priority;
    if (q.run_at_from !== undefined) search.runAtFromMs = q.run_at_from;
    if (q.run_at_to !== undefined) search.runAtToMs = q.run_at_to;
    if (q.id) search.id = q.id;
    if (q.idempotency_key) search.idempotencyKey = q.idempotency_key;
    if (q.cursor) search.beforeId = q.cursor;
    const tasks = await this.store.search(principal.tenantId, search);
    return pageOf(tasks, q.limit, (t) => t.id);
  }

  /** GET /v1/dead-letters: open (default true), cursor, limit. */
  async deadLetters(principal: Principal, query: string): Promise<Page<DeadLetterRecord>> {
    const q = parseQuery(DeadLetterListQuery, query);
    const letters = await this.store.deadLetters(principal.tenantId, {
      openOnly: q.open !== "false",
      ...(q.cursor && { before: q.cursor }),
      limit: q.limit + 1,
    });
    return pageOf(letters, q.limit, (d) => `${d.deadAtMs}~${d.id}`);
  }

  /** GET /v1/workflows: cursor, limit. */
  async workflows(principal: Principal, query: string): Promise<Page<WorkflowSummary>> {
    const q = parseQuery(WorkflowListQuery, query);
    const rows = await this.store.workflows(principal.tenantId, q.cursor ?? null, q.limit + 1);
    return pageOf(rows, q.limit, (w) => w.id);
  }

  /** POST /v1/watchdog/alerts: the watchdog's alert transitions, stored for its tenant. */
  async reportAlert(principal: Principal, body: unknown): Promise<AlertReport> {
    const alert: AlertReport = parseBody(AlertReportRequest, body);
    await this.store.reportAlert(principal.tenantId, alert, this.clock.nowMs());
    return alert;
  }
}

function pageOf<T>(rows: T[], limit: number, cursorOf: (row: T) => string): Page<T> {
  const more = rows.length > limit;
  const items = more ? rows.slice(0, limit) : rows;
  return { items, nextCursor: more ? cursorOf(items[items.length - 1]!) : null };
}
