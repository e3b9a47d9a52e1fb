/**
 * The dashboard's tenant-scoped statements (PgDashboardStore; contract:
 * ports/dashboard-store.ts). All run inside withTenant, so row-level
 * security restricts them to app.tenant_id as well as their WHERE clauses.
 * Every scan is bounded by a LIMIT the caller passes.
 */
import { sqlEpochMs, sqlTimestamptz } from "../epoch-ms.js";
import { TASK_COLUMNS } from "./tasks.js";
import { unfinishedByRunAt } from "./unfinished.js";

/**
 * count-by-state: $1 tenant_id, $2 max_rows. Locks: nothing.
 * → (status, priority, count) over the tenant's newest $2 tasks by id, and on
 *   every row the number counted and the oldest id counted. Cost: a backward
 *   scan of the primary key (tenant_id, id, run_at) in each partition, merged, stopped at $2 rows.
 */
export const COUNT_BY_STATE = `
WITH newest AS (
  SELECT id, status, priority FROM tasks WHERE tenant_id = $1 ORDER BY id DESC LIMIT $2
)
SELECT status, priority, count(*)::int AS count,
       (SELECT count(*)::int FROM newest) AS counted,
       (SELECT id FROM newest ORDER BY id LIMIT 1) AS oldest_id
  FROM newest GROUP BY status, priority`;

/**
 * count-overdue: $1 tenant_id, $2 before timestamptz (now − the tenant's
 * grace), $3 max_rows. Locks: nothing.
 * → count: SCHEDULED or ARMED tasks due before $2, at most $3. Past
 *   partitions only (pruned at plan time: $2 is a timestamptz constant); the
 *   unfinished tasks due before $2 are few in a healthy system (unfinished.ts).
 */
export const COUNT_OVERDUE = `
SELECT count(*)::int AS count FROM (
  SELECT 1 FROM ${unfinishedByRunAt({
    columns: "1",
    where: "run_at < $2::timestamptz AND tenant_id = $1 AND status IN ('SCHEDULED', 'ARMED')",
    limit: "$3",
  })} AS o
   LIMIT $3
) overdue`;

/**
 * count-open-dead-letters: $1 tenant_id, $2 max_rows. Locks: nothing.
 * → count of dead letters not replayed, at most $2.
 */
export const COUNT_OPEN_DEAD_LETTERS = `
SELECT count(*)::int AS count FROM (
  SELECT 1 FROM dead_letters WHERE tenant_id = $1 AND replayed_at IS NULL LIMIT $2
) open`;

/**
 * tenant-activity: $1 tenant_id, $2 since_ms. Locks: nothing.
 * → one row (buckets jsonb) per node that reported the tenant since $2.
 */
export const TENANT_ACTIVITY = `
SELECT buckets FROM node_tenant_stats
 WHERE tenant_id = $1 AND seen_at >= ${sqlTimestamptz("$2::float8")}`;

const ALERT_COLUMNS = `tenant_id, key, kind, state, message, details,
  ${sqlEpochMs("fired_at")} AS fired_at_ms, ${sqlEpochMs("updated_at")} AS updated_at_ms`;

/** tenant-alerts: $1 tenant_id. Locks: nothing. → the tenant's watchdog alerts, firing first. */
export const TENANT_ALERTS = `
SELECT ${ALERT_COLUMNS} FROM watchdog_alerts WHERE tenant_id = $1
 ORDER BY state, updated_at DESC LIMIT 200`;

/**
 * report-alert: $1 tenant_id, $2 key, $3 kind, $4 state, $5 message, $6
 * details jsonb, $7 now_ms. Locks: the alert's row.
 * → no rows. fired_at moves only when the alert starts firing again.
 */
export const REPORT_ALERT = `
INSERT INTO watchdog_alerts AS a (tenant_id, key, kind, state, message, details, fired_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6::jsonb, ${sqlTimestamptz("$7::float8")}, ${sqlTimestamptz("$7::float8")})
ON CONFLICT (tenant_id, key) DO UPDATE
   SET kind = EXCLUDED.kind, state = EXCLUDED.state, message = EXCLUDED.message,
       details = EXCLUDED.details, updated_at = EXCLUDED.updated_at,
       fired_at = CASE WHEN a.state = 'firing' AND EXCLUDED.state = 'firing' THEN a.fired_at
                       ELSE EXCLUDED.fired_at END`;

/**
 * task-history: $1 tenant_id, $2 id. Locks: nothing.
 * → 0 or 1 row: TASK_COLUMNS and every instant, the execution lease, the
 *   dispatch shard and epoch, and tasks.attempts.
 */
export const TASK_HISTORY = `
SELECT ${TASK_COLUMNS}, lease_owner, ${sqlEpochMs("lease_expires_at")} AS lease_expires_at_ms,
       dispatch_shard, dispatch_epoch::float8 AS dispatch_epoch,
       ${sqlEpochMs("armed_at")} AS armed_at_ms, ${sqlEpochMs("dispatched_at")} AS dispatched_at_ms,
       ${sqlEpochMs("started_at")} AS started_at_ms, ${sqlEpochMs("completed_at")} AS completed_at_ms,
       ${sqlEpochMs("failed_at")} AS failed_at_ms, ${sqlEpochMs("dead_at")} AS dead_at_ms,
       ${sqlEpochMs("skipped_at")} AS skipped_at_ms, attempts
  FROM tasks WHERE tenant_id = $1 AND id = $2`;

/**
 * search-tasks: one page, newest first. $1 tenant_id, $2 status|null,
 * $3 type|null, $4 priority|null, $5 run_at_from timestamptz|null,
 * $6 run_at_to timestamptz|null (exclusive), $7 id uuid|null,
 * $8 idempotency_key|null, $9 before_id uuid|null (exclusive cursor),
 * $10 limit. Locks: nothing.
 * → up to $10 rows of TASK_COLUMNS. The run_at bounds prune partitions at
 *   execution time; an idempotency key resolves through idempotency_keys.
 */
export const SEARCH_TASKS = `
SELECT ${TASK_COLUMNS} FROM tasks
 WHERE tenant_id = $1
   AND ($2::text IS NULL OR status = $2)
   AND ($3::text IS NULL OR type = $3)
   AND ($4::text IS NULL OR priority = $4)
   AND ($5::timestamptz IS NULL OR run_at >= $5::timestamptz)
   AND ($6::timestamptz IS NULL OR run_at < $6::timestamptz)
   AND ($7::uuid IS NULL OR id = $7::uuid)
   AND ($8::text IS NULL OR id = (SELECT task_id FROM idempotency_keys
                                   WHERE tenant_id = $1 AND idempotency_key = $8))
   AND ($9::uuid IS NULL OR id < $9::uuid)
 ORDER BY id DESC
 LIMIT $10`;

/**
 * dead-letters: one page, newest death first. $1 tenant_id, $2 open_only
 * boolean, $3 before_dead_at_ms float8|null, $4 before_id uuid|null (the
 * keyset cursor: both or neither), $5 limit. Locks: nothing.
 * → up to $5 dead letters, through dead_letters_tenant_dead_at_idx.
 */
export const DEAD_LETTERS = `
SELECT id, task_id, type, payload, attempt, max_attempts, fencing_token::text AS fencing_token,
       error, reason, worker_id, ${sqlEpochMs("run_at")} AS run_at_ms,
       ${sqlEpochMs("dead_at")} AS dead_at_ms, ${sqlEpochMs("replayed_at")} AS replayed_at_ms
  FROM dead_letters
 WHERE tenant_id = $1
   AND (NOT $2::boolean OR replayed_at IS NULL)
   AND ($3::float8 IS NULL
        OR (dead_at, id) < (${sqlTimestamptz("$3::float8")}, $4::uuid))
 ORDER BY dead_at DESC, id DESC
 LIMIT $5`;

/**
 * list-workflows: $1 tenant_id, $2 before_id uuid|null (exclusive), $3 limit.
 * Locks: nothing. → up to $3 workflows, newest first (workflows_tenant_id_idx).
 */
export const LIST_WORKFLOWS = `
SELECT id, status, fail_fast, node_count, pending_nodes, dead_nodes,
       ${sqlEpochMs("created_at")} AS created_at_ms, ${sqlEpochMs("updated_at")} AS updated_at_ms,
       ${sqlEpochMs("finished_at")} AS finished_at_ms
  FROM workflows
 WHERE tenant_id = $1 AND ($2::uuid IS NULL OR id < $2::uuid)
 ORDER BY id DESC
 LIMIT $3`;
