/**
 * The API's task statements (PgTaskStore): insert, read, list, cancel. All
 * but INSERT_TASKS run inside withTenant, so row-level security restricts
 * them to app.tenant_id as well as their WHERE clauses.
 */
import { sqlEpochMs, sqlTimestamptz } from "../epoch-ms.js";

/** The columns the API reads back, with times as epoch ms (no Date parsing in Node). */
export const TASK_COLUMNS = `
  id, tenant_id, type, payload, priority, status,
  ${sqlEpochMs("run_at")} AS run_at_ms,
  attempt, max_attempts, timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
  idempotency_key, fencing_token::text AS fencing_token, result, last_error, workflow_id, schedule_id,
  ${sqlEpochMs("created_at")} AS created_at_ms,
  ${sqlEpochMs("updated_at")} AS updated_at_ms,
  ${sqlEpochMs("cancelled_at")} AS cancelled_at_ms,
  ${sqlEpochMs("coalesce(completed_at, dead_at, skipped_at)")} AS finished_at_ms`;

/**
 * insert-tasks: one group commit. The contract of cf_insert_tasks is in
 * migrations/000003_api_functions.sql (each row also carries hot_shard since
 * 000008_hot_shard.sql, which replaces the function). Sent as a single
 * statement outside BEGIN/COMMIT, so Postgres commits it on its own: one
 * round trip, one fsync.
 * $1 rows jsonb, $2 tenants uuid[] (distinct), $3 now_ms float8.
 * Locks: the rows it inserts, and the idempotency keys it claims (a
 * concurrent claim of the same key waits for this commit).
 * → rows (ord, task_id, request_hash hex) for idempotency keys that were already taken.
 */
export const INSERT_TASKS = `
SELECT ord, task_id, encode(request_hash, 'hex') AS request_hash
  FROM cf_insert_tasks($1::jsonb, $2::uuid[], ${sqlTimestamptz("$3")})`;

/**
 * get-task: one task of one tenant.
 * $1 tenant_id uuid, $2 id uuid. Locks: nothing.
 * → 0 or 1 row of TASK_COLUMNS.
 */
export const GET_TASK = `SELECT ${TASK_COLUMNS} FROM tasks WHERE tenant_id = $1 AND id = $2`;

/**
 * list-tasks: one page of a tenant's tasks, newest id last, keyset-paginated.
 * $1 tenant_id uuid, $2 status text|null, $3 type text|null,
 * $4 after_id uuid|null (exclusive cursor), $5 limit int. Locks: nothing.
 * → up to $5 rows of TASK_COLUMNS. UUIDv7 ids sort by creation time, so
 *   pages are stable under inserts.
 */
export const LIST_TASKS = `SELECT ${TASK_COLUMNS} FROM tasks
  WHERE tenant_id = $1
    AND ($2::text IS NULL OR status = $2)
    AND ($3::text IS NULL OR type = $3)
    AND ($4::uuid IS NULL OR id > $4)
  ORDER BY id
  LIMIT $5`;

/**
 * list-task-changes: the change feed (GET /v1/tasks?order=updated_at), one
 * page of a tenant's tasks in (updated_at, id) order after a position,
 * looking only at its $7 most recently created tasks: the inner scan walks
 * the primary key (tenant_id, id, run_at) backwards and stops there, so a page costs at most $7
 * index entries and heap rows whatever the feed's position, with no index
 * on updated_at (which every transition would maintain).
 * $1 tenant_id uuid, $2 status text|null, $3 type text|null,
 * $4 after updated_at ms float8, $5 after id uuid (exclusive position),
 * $6 limit int, $7 window of newest tasks int. Locks: nothing.
 * → up to $6 rows of TASK_COLUMNS.
 */
export const LIST_TASK_CHANGES = `SELECT ${TASK_COLUMNS} FROM (
    SELECT * FROM tasks WHERE tenant_id = $1 ORDER BY id DESC LIMIT $7
  ) newest
  WHERE ($2::text IS NULL OR status = $2)
    AND ($3::text IS NULL OR type = $3)
    AND (updated_at, id) > (${sqlTimestamptz("$4")}, $5::uuid)
  ORDER BY updated_at, id
  LIMIT $6`;

/**
 * cancel-task: moves a task to CANCELLED if it has not started, and writes
 * the audit row in the same statement (so in the same transaction).
 * $1 tenant_id uuid, $2 id uuid, $3 now_ms float8, $4 api_key_id uuid,
 * $5 cancellable statuses text[].
 * Locks: the task's row, FOR UPDATE: a concurrent dispatcher or worker
 * transition waits, so the status we test is the status we change. (The
 * caller takes its workflow's row first: LOCK_WORKFLOW_OF_TASK.)
 * → 1 row (TASK_COLUMNS after the change) if this call cancelled it, else 0
 *   rows: the caller then reads the task to tell "unknown" from "not cancellable".
 */
export const CANCEL_TASK = `
WITH target AS (
  SELECT id AS target_id, run_at AS target_run_at FROM tasks
   WHERE tenant_id = $1 AND id = $2 AND status = ANY($5::text[])
   FOR UPDATE
),
changed AS (
  UPDATE tasks t
     SET status = 'CANCELLED',
         cancelled_at = ${sqlTimestamptz("$3")},
         updated_at = ${sqlTimestamptz("$3")}
    FROM target
   WHERE t.tenant_id = $1 AND t.id = target.target_id AND t.run_at = target.target_run_at
     AND t.status = ANY($5::text[])
  RETURNING ${TASK_COLUMNS}
),
audited AS (
  INSERT INTO audit_log (tenant_id, api_key_id, action, task_ids, at)
  SELECT $1, $4, 'task.cancel', ARRAY[changed.id], ${sqlTimestamptz("$3")}
    FROM changed
)
SELECT * FROM changed`;
