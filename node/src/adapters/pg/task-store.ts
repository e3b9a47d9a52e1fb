import { shardOf } from "../../domain/shard.js";
import { CANCELLABLE_STATUSES, type Task } from "../../domain/task.js";
import type {
  CancelOutcome,
  InsertOutcome,
  InsertRequest,
  TaskFilter,
  TaskStore,
} from "../../ports/task-store.js";
import { roundMs, roundMsOrNull } from "./epoch-ms.js";
import { fromPgError } from "./errors.js";
import { type PgPool, withTenant } from "./pool.js";
import { CANCEL_TASK, GET_TASK, INSERT_TASKS, LIST_TASK_CHANGES, LIST_TASKS } from "./sql/tasks.js";
import { LOCK_WORKFLOW_OF_TASK } from "./sql/workflows.js";
import { releaseDependents } from "./workflow-release.js";

/** The Postgres TaskStore. Every method maps failures through fromPgError. */
export class PgTaskStore implements TaskStore {
  constructor(private readonly pool: PgPool) {}

  async insertMany(rows: readonly InsertRequest[], nowMs: number): Promise<InsertOutcome[]> {
    let taken: Array<{ ord: number; task_id: string; request_hash: string }>;
    try {
      const tenants = [...new Set(rows.map((row) => row.draft.tenantId))];
      const result = await this.pool.query(INSERT_TASKS, [encodeRows(rows), tenants, nowMs]);
      taken = result.rows;
    } catch (error) {
      throw fromPgError(error, "insert tasks");
    }
    const outcomes: InsertOutcome[] = rows.map(() => ({ kind: "created" }));
    for (const row of taken) {
      const mine = rows[row.ord]!;
      const sameBody = mine.requestHash !== null && toHex(mine.requestHash) === row.request_hash;
      outcomes[row.ord] = { kind: sameBody ? "replayed" : "conflict", taskId: row.task_id };
    }
    return outcomes;
  }

  async get(tenantId: string, taskId: string): Promise<Task | null> {
    try {
      return await withTenant(this.pool, tenantId, async (client) => {
        const result = await client.query(GET_TASK, [tenantId, taskId]);
        return result.rows[0] ? toTask(result.rows[0]) : null;
      });
    } catch (error) {
      throw fromPgError(error, "get task");
    }
  }

  async list(tenantId: string, filter: TaskFilter): Promise<Task[]> {
    const { changes } = filter;
    const where = [tenantId, filter.status ?? null, filter.type ?? null];
    const [statement, params] = changes
      ? [
          LIST_TASK_CHANGES,
          [
            ...where,
            changes.after.updatedAtMs,
            changes.after.id,
            filter.limit,
            changes.windowTasks,
          ],
        ]
      : [LIST_TASKS, [...where, filter.afterId ?? null, filter.limit]];
    try {
      return await withTenant(this.pool, tenantId, async (client) => {
        const result = await client.query(statement, params);
        return result.rows.map(toTask);
      });
    } catch (error) {
      throw fromPgError(error, "list tasks");
    }
  }

  async cancel(
    tenantId: string,
    taskId: string,
    apiKeyId: string,
    nowMs: number,
  ): Promise<CancelOutcome> {
    try {
      return await withTenant(this.pool, tenantId, async (client) => {
        // A workflow node's cancel runs the releaser: its workflow's lock comes
        // before the task's (lock order of migrations/000007_workflows.sql).
        await client.query(LOCK_WORKFLOW_OF_TASK, [taskId]);
        const params = [tenantId, taskId, nowMs, apiKeyId, CANCELLABLE_STATUSES];
        const changed = await client.query(CANCEL_TASK, params);
        if (changed.rows[0]) {
          const task = toTask(changed.rows[0]);
          // Children it releases reach Redis through the reconciler's re-hydration.
          if (task.workflowId !== null) {
            await releaseDependents(client, { taskId: task.id, runAtMs: task.runAtMs }, nowMs);
          }
          return { kind: "cancelled", task };
        }
        const current = await client.query(GET_TASK, [tenantId, taskId]);
        if (!current.rows[0]) return { kind: "not_found" };
        return { kind: "not_cancellable", task: toTask(current.rows[0]) };
      });
    } catch (error) {
      throw fromPgError(error, "cancel task");
    }
  }
}

const toHex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");

/**
 * Builds the json argument of cf_insert_tasks by hand: the payload is already
 * JSON text, so it is spliced in rather than parsed and serialised again.
 */
export function encodeRows(rows: readonly InsertRequest[]): string {
  const parts: string[] = new Array(rows.length);
  for (let ord = 0; ord < rows.length; ord++) parts[ord] = encodeRow(rows[ord]!, ord);
  return `[${parts.join(",")}]`;
}

/** One row of encodeRows (workflow nodes use it too, adding their own fields). */
export function encodeRow(row: InsertRequest, ord: number): string {
  const { draft, requestHash, apiKeyId, requestId } = row;
  return (
    `{"ord":${ord},"id":"${draft.id}","tenant_id":"${draft.tenantId}",` +
    `"hot_shard":${shardOf(draft.tenantId, draft.id)},` +
    `"type":${JSON.stringify(draft.type)},"payload":${draft.payloadJson},` +
    `"priority":"${draft.priority}","run_at_ms":${draft.runAtMs},` +
    `"max_attempts":${draft.maxAttempts},"timeout_ms":${draft.timeoutMs},` +
    `"backoff_strategy":"${draft.backoff.strategy}","backoff_base_ms":${draft.backoff.baseMs},` +
    `"backoff_max_ms":${draft.backoff.maxMs},"created_at_ms":${draft.createdAtMs},` +
    `"idempotency_key":${draft.idempotencyKey === null ? "null" : JSON.stringify(draft.idempotencyKey)},` +
    `"request_hash":${requestHash === null ? "null" : `"${toHex(requestHash)}"`},` +
    `"api_key_id":"${apiKeyId}","request_id":${JSON.stringify(requestId)}}`
  );
}

export interface TaskRow {
  id: string;
  tenant_id: string;
  type: string;
  payload: unknown;
  priority: Task["priority"];
  status: Task["status"];
  run_at_ms: number;
  attempt: number;
  max_attempts: number;
  timeout_ms: number;
  backoff_strategy: Task["backoff"]["strategy"];
  backoff_base_ms: number;
  backoff_max_ms: number;
  idempotency_key: string | null;
  fencing_token: string | null;
  result: unknown;
  last_error: unknown;
  workflow_id: string | null;
  schedule_id: string | null;
  created_at_ms: number;
  updated_at_ms: number;
  cancelled_at_ms: number | null;
  finished_at_ms: number | null;
}

/** A row of TASK_COLUMNS as a Task (the dashboard's reads share it). */
export function toTask(row: TaskRow): Task {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    type: row.type,
    payload: row.payload,
    priority: row.priority,
    status: row.status,
    runAtMs: roundMs(row.run_at_ms),
    attempt: row.attempt,
    maxAttempts: row.max_attempts,
    timeoutMs: row.timeout_ms,
    backoff: {
      strategy: row.backoff_strategy,
      baseMs: row.backoff_base_ms,
      maxMs: row.backoff_max_ms,
    },
    idempotencyKey: row.idempotency_key,
    fencingToken: row.fencing_token,
    result: row.result,
    lastError: row.last_error,
    workflowId: row.workflow_id,
    scheduleId: row.schedule_id,
    createdAtMs: roundMs(row.created_at_ms),
    updatedAtMs: roundMs(row.updated_at_ms),
    cancelledAtMs: roundMsOrNull(row.cancelled_at_ms),
    finishedAtMs: roundMsOrNull(row.finished_at_ms),
  };
}
