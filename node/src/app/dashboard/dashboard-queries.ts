/**
 * The dashboard's list reads that the task, schedule and workflow use cases
 * lack: a task search with more filters, the dead letters, the workflows;
 * and the watchdog's alert reports. Each parses its query strictly
 * (query-params.ts) and pages by keyset, newest first.
 */
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import { TASK_TYPE_PATTERN } from "../../domain/submission.js";
import { PRIORITIES, TASK_STATUSES, type Task } from "../../domain/task.js";
import type { Principal } from "../../domain/tenant.js";
import type { Clock } from "../../ports/clock.js";
import type {
  AlertReport,
  DashboardStore,
  DeadLetterRecord,
  TaskSearch,
  WorkflowSummary,
} from "../../ports/dashboard-store.js";
import { badQuery, enumParam, instantParam, intParam, UUID, uuidParam } from "./query-params.js";

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 500;

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
    const params = new URLSearchParams(query);
    const limit = intParam(params, "limit", 1, MAX_LIMIT, DEFAULT_LIMIT);
    const search: TaskSearch = { limit: limit + 1 };
    const status = enumParam(params, "status", TASK_STATUSES);
    const priority = enumParam(params, "priority", PRIORITIES);
    const type = params.get("type");
    if (type !== null && type !== "") {
      if (!TASK_TYPE_PATTERN.test(type)) throw badQuery("type", type);
      search.type = type;
    }
    const key = params.get("idempotency_key");
    if (key !== null && key !== "") {
      if (!/^[\x21-\x7e]{1,255}$/.test(key)) throw badQuery("idempotency_key", key);
      search.idempotencyKey = key;
    }
    const from = instantParam(params, "run_at_from");
    const to = instantParam(params, "run_at_to");
    const id = uuidParam(params, "id");
    const cursor = uuidParam(params, "cursor");
    if (status) search.status = status;
    if (priority) search.priority = priority;
    if (from !== undefined) search.runAtFromMs = from;
    if (to !== undefined) search.runAtToMs = to;
    if (id) search.id = id;
    if (cursor) search.beforeId = cursor;
    const tasks = await this.store.search(principal.tenantId, search);
    return pageOf(tasks, limit, (t) => t.id);
  }

  /** GET /v1/dead-letters: open (default true), cursor, limit. */
  async deadLetters(principal: Principal, query: string): Promise<Page<DeadLetterRecord>> {
    const params = new URLSearchParams(query);
    const limit = intParam(params, "limit", 1, MAX_LIMIT, DEFAULT_LIMIT);
    const open = enumParam(params, "open", ["true", "false"] as const) ?? "true";
    const rawCursor = params.get("cursor");
    let before: { deadAtMs: number; id: string } | undefined;
    if (rawCursor !== null && rawCursor !== "") {
      const [ms, id] = rawCursor.split("~");
      const deadAtMs = Number(ms);
      if (!Number.isFinite(deadAtMs) || id === undefined || !UUID.test(id))
        throw badQuery("cursor", rawCursor);
      before = { deadAtMs, id };
    }
    const letters = await this.store.deadLetters(principal.tenantId, {
      openOnly: open === "true",
      ...(before && { before }),
      limit: limit + 1,
    });
    return pageOf(letters, limit, (d) => `${d.deadAtMs}~${d.id}`);
  }

  /** GET /v1/workflows: cursor, limit. */
  async workflows(principal: Principal, query: string): Promise<Page<WorkflowSummary>> {
    const params = new URLSearchParams(query);
    const limit = intParam(params, "limit", 1, MAX_LIMIT, DEFAULT_LIMIT);
    const cursor = uuidParam(params, "cursor") ?? null;
    const rows = await this.store.workflows(principal.tenantId, cursor, limit + 1);
    return pageOf(rows, limit, (w) => w.id);
  }

  /** POST /v1/watchdog/alerts: the watchdog's alert transitions, stored for its tenant. */
  async reportAlert(principal: Principal, body: unknown): Promise<AlertReport> {
    const alert = alertOf(body);
    await this.store.reportAlert(principal.tenantId, alert, this.clock.nowMs());
    return alert;
  }
}

function pageOf<T>(rows: T[], limit: number, cursorOf: (row: T) => string): Page<T> {
  const more = rows.length > limit;
  const items = more ? rows.slice(0, limit) : rows;
  return { items, nextCursor: more ? cursorOf(items[items.length - 1]!) : null };
}

const ALERT_FIELDS = new Set(["key", "kind", "state", "message", "details"]);

function alertOf(body: unknown): AlertReport {
  const invalid = (message: string) =>
    new ChronofenceError(ErrorCode.InvalidRequest, message, { details: {} });
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw invalid("the body must be a JSON object");
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).filter((k) => !ALERT_FIELDS.has(k));
  if (unknown.length > 0) throw invalid(`unknown field ${unknown[0]!.slice(0, 64)}`);
  const text = (name: string, max: number): string => {
    const value = b[name];
    if (typeof value !== "string" || value.length < 1 || value.length > max || value.includes("\0"))
      throw invalid(`${name} must be a string of 1-${max} characters`);
    return value;
  };
  const kind = b.kind;
  if (kind !== "canary" && kind !== "dead_mans_switch")
    throw invalid("kind must be canary or dead_mans_switch");
  const state = b.state;
  if (state !== "firing" && state !== "resolved") throw invalid("state must be firing or resolved");
  const details = b.details ?? {};
  if (typeof details !== "object" || details === null || Array.isArray(details))
    throw invalid("details must be a JSON object");
  if (JSON.stringify(details).length > 16_384) throw invalid("details must be at most 16 KiB");
  return {
    key: text("key", 200),
    kind,
    state,
    message: text("message", 4096),
    details: details as Record<string, unknown>,
  };
}
