/**
 * The Postgres DashboardStore (contract: ports/dashboard-store.ts; SQL:
 * sql/dashboard.ts). Every call runs in a tenant transaction (row-level
 * security) on the API's pool.
 */
import type { ActivityBucket, AlertRecord } from "../../ports/cluster-store.js";
import type {
  AlertReport,
  AttemptRecord,
  DashboardStore,
  DeadLetterQuery,
  DeadLetterRecord,
  StatsQuery,
  TaskHistoryRecord,
  TaskSearch,
  TenantStatsRecord,
  WorkflowSummary,
} from "../../ports/dashboard-store.js";
import { isoOfMs, roundMs, roundMsOrNull } from "./epoch-ms.js";
import { fromPgError } from "./errors.js";
import { type PgPool, withTenant } from "./pool.js";
import {
  COUNT_BY_STATE,
  COUNT_OPEN_DEAD_LETTERS,
  COUNT_OVERDUE,
  DEAD_LETTERS,
  LIST_WORKFLOWS,
  REPORT_ALERT,
  SEARCH_TASKS,
  TASK_HISTORY,
  TENANT_ACTIVITY,
  TENANT_ALERTS,
} from "./sql/dashboard.js";
import { type TaskRow, toTask } from "./task-store.js";

// biome-ignore lint/suspicious/noExplicitAny: rows of sql/dashboard.ts, read field by field
type Row = any;

export class PgDashboardStore implements DashboardStore {
  constructor(private readonly pool: PgPool) {}

  stats(tenantId: string, query: StatsQuery): Promise<TenantStatsRecord> {
    return this.scoped(tenantId, "read tenant stats", async (db) => {
      const states = await db.query(COUNT_BY_STATE, [tenantId, query.maxRows]);
      const overdue = await db.query(COUNT_OVERDUE, [
        tenantId,
        isoOfMs(query.overdueBeforeMs),
        query.maxRows,
      ]);
      const letters = await db.query(COUNT_OPEN_DEAD_LETTERS, [tenantId, query.maxRows]);
      const activity = await db.query(TENANT_ACTIVITY, [tenantId, query.activitySinceMs]);
      const alerts = await db.query(TENANT_ALERTS, [tenantId]);
      const first: Row | undefined = states.rows[0];
      const countedRows: number = first?.counted ?? 0;
      return {
        counts: {
          byState: states.rows.map((r: Row) => ({
            status: r.status,
            priority: r.priority,
            count: r.count,
          })),
          countedRows,
          capped: countedRows >= query.maxRows,
          oldestCountedId: first?.oldest_id ?? null,
          overdue: overdue.rows[0].count,
          openDeadLetters: letters.rows[0].count,
        },
        activity: activity.rows.map((r: Row) => bucketsOf(r.buckets)),
        alerts: alerts.rows.map(alertOf),
      };
    });
  }

  history(tenantId: string, taskId: string): Promise<TaskHistoryRecord | null> {
    return this.scoped(tenantId, "read task history", async (db) => {
      const row: Row | undefined = (await db.query(TASK_HISTORY, [tenantId, taskId])).rows[0];
      if (!row) return null;
      return {
        task: toTask(row as TaskRow),
        fencingToken: row.fencing_token,
        leaseOwner: row.lease_owner,
        leaseExpiresAtMs: roundMsOrNull(row.lease_expires_at_ms),
        dispatchShard: row.dispatch_shard,
        dispatchEpoch: row.dispatch_epoch,
        armedAtMs: roundMsOrNull(row.armed_at_ms),
        dispatchedAtMs: roundMsOrNull(row.dispatched_at_ms),
        startedAtMs: roundMsOrNull(row.started_at_ms),
        completedAtMs: roundMsOrNull(row.completed_at_ms),
        failedAtMs: roundMsOrNull(row.failed_at_ms),
        deadAtMs: roundMsOrNull(row.dead_at_ms),
        skippedAtMs: roundMsOrNull(row.skipped_at_ms),
        attempts: Array.isArray(row.attempts) ? row.attempts.map(attemptOf) : [],
      };
    });
  }

  search(tenantId: string, search: TaskSearch) {
    return this.scoped(tenantId, "search tasks", async (db) => {
      const iso = (ms: number | undefined) => (ms === undefined ? null : isoOfMs(ms));
      const result = await db.query(SEARCH_TASKS, [
        tenantId,
        search.status ?? null,
        search.type ?? null,
        search.priority ?? null,
        iso(search.runAtFromMs),
        iso(search.runAtToMs),
        search.id ?? null,
        search.idempotencyKey ?? null,
        search.beforeId ?? null,
        search.limit,
      ]);
      return result.rows.map((r: Row) => toTask(r as TaskRow));
    });
  }

  deadLetters(tenantId: string, query: DeadLetterQuery): Promise<DeadLetterRecord[]> {
    return this.scoped(tenantId, "list dead letters", async (db) => {
      const result = await db.query(DEAD_LETTERS, [
        tenantId,
        query.openOnly,
        query.before?.deadAtMs ?? null,
        query.before?.id ?? null,
        query.limit,
      ]);
      return result.rows.map((r: Row) => ({
        id: r.id,
        taskId: r.task_id,
        type: r.type,
        payload: r.payload,
        attempt: r.attempt,
        maxAttempts: r.max_attempts,
        fencingToken: r.fencing_token,
        error: r.error,
        reason: r.reason,
        workerId: r.worker_id,
        runAtMs: roundMs(r.run_at_ms),
        // Exact: the keyset cursor compares it with the stored instant.
        deadAtMs: Number(r.dead_at_ms),
        replayedAtMs: roundMsOrNull(r.replayed_at_ms),
      }));
    });
  }

  workflows(tenantId: string, beforeId: string | null, limit: number): Promise<WorkflowSummary[]> {
    return this.scoped(tenantId, "list workflows", async (db) => {
      const result = await db.query(LIST_WORKFLOWS, [tenantId, beforeId, limit]);
      return result.rows.map((r: Row) => ({
        id: r.id,
        status: r.status,
        failFast: r.fail_fast,
        nodeCount: r.node_count,
        pendingNodes: r.pending_nodes,
        deadNodes: r.dead_nodes,
        createdAtMs: roundMs(r.created_at_ms),
        updatedAtMs: roundMs(r.updated_at_ms),
        finishedAtMs: roundMsOrNull(r.finished_at_ms),
      }));
    });
  }

  reportAlert(tenantId: string, alert: AlertReport, nowMs: number): Promise<void> {
    return this.scoped(tenantId, "report alert", async (db) => {
      await db.query(REPORT_ALERT, [
        tenantId,
        alert.key,
        alert.kind,
        alert.state,
        alert.message,
        JSON.stringify(alert.details),
        nowMs,
      ]);
    });
  }

  private async scoped<T>(
    tenantId: string,
    what: string,
    fn: (db: { query: PgPool["query"] }) => Promise<T>,
  ): Promise<T> {
    try {
      return await withTenant(this.pool, tenantId, (client) => fn(client as never));
    } catch (error) {
      throw fromPgError(error, what);
    }
  }
}

/** node_tenant_stats.buckets as written by PgClusterStore (snake_case JSON). */
export function bucketsOf(json: unknown): ActivityBucket[] {
  if (!Array.isArray(json)) return [];
  return json.map((b: Row) => ({
    startMs: Number(b.start_ms),
    completed: Number(b.completed) || 0,
    failed: Number(b.failed) || 0,
    dead: Number(b.dead) || 0,
    publish: b.publish ?? {},
    start: b.start ?? {},
  }));
}

export const bucketsJson = (buckets: readonly ActivityBucket[]): string =>
  JSON.stringify(
    buckets.map((b) => ({
      start_ms: b.startMs,
      completed: b.completed,
      failed: b.failed,
      dead: b.dead,
      publish: b.publish,
      start: b.start,
    })),
  );

export function alertOf(r: Row): AlertRecord {
  return {
    tenantId: r.tenant_id,
    key: r.key,
    kind: r.kind,
    state: r.state,
    message: r.message,
    details: r.details,
    firedAtMs: roundMs(r.fired_at_ms),
    updatedAtMs: roundMs(r.updated_at_ms),
  };
}

function attemptOf(entry: Row): AttemptRecord {
  const msOrNull = (value: unknown) => (typeof value === "number" ? Math.round(value) : null);
  return {
    attempt: Number(entry.attempt),
    fencingToken: entry.fencing_token ?? null,
    workerId: entry.worker_id ?? null,
    dispatchedAtMs: msOrNull(entry.dispatched_at_ms),
    startedAtMs: msOrNull(entry.started_at_ms),
    endedAtMs: msOrNull(entry.ended_at_ms),
    outcome: entry.outcome,
    error: entry.error ?? null,
  };
}
