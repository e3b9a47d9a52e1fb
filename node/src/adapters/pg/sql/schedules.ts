/**
 * The API's schedule statements (tables in migrations/000006_schedules.sql).
 * All run inside withTenant, so row-level security scopes them as well as
 * their WHERE clauses. Times cross the wire as epoch ms (float8).
 */
const ts = (param: string) => `timestamptz 'epoch' + ${param} * interval '1 millisecond'`;
const ms = (column: string) => `(extract(epoch FROM ${column}) * 1000)::float8`;

export const SCHEDULE_COLUMNS = `
  id, tenant_id, name, expression, time_zone, type, payload, priority, max_attempts, timeout_ms,
  backoff_strategy, backoff_base_ms, backoff_max_ms, misfire_policy, overlap_policy, jitter_ms,
  expect_within_ms, paused, version::float8 AS version, ${ms("planned_through")} AS planned_through_ms,
  ${ms("next_occurrence_at")} AS next_occurrence_ms, ${ms("created_at")} AS created_at_ms,
  ${ms("updated_at")} AS updated_at_ms`;

/**
 * $1 id, $2 tenant, $3 name, $4 expression, $5 time_zone, $6 type, $7 payload (json text),
 * $8 priority, $9 max_attempts, $10 timeout_ms, $11 backoff_strategy, $12 base_ms, $13 max_ms,
 * $14 misfire, $15 overlap, $16 jitter_ms, $17 expect_within_ms, $18 paused, $19 plan_shard,
 * $20 planned_through_ms, $21 next_occurrence_ms, $22 now_ms → 1 row, or 0 when the name is taken.
 */
export const INSERT_SCHEDULE = `
INSERT INTO schedules (id, tenant_id, name, expression, time_zone, type, payload, priority,
                       max_attempts, timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
                       misfire_policy, overlap_policy, jitter_ms, expect_within_ms, paused,
                       plan_shard, planned_through, next_occurrence_at, version, created_at,
                       updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19,
        ${ts("$20")}, ${ts("$21")}, 1, ${ts("$22")}, ${ts("$22")})
ON CONFLICT (tenant_id, name) DO NOTHING
RETURNING ${SCHEDULE_COLUMNS}`;

/** $1 tenant, $2 id → the row, locked for the rest of the transaction. */
export const LOCK_SCHEDULE = `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE tenant_id = $1 AND id = $2 FOR UPDATE`;

export const GET_SCHEDULE = `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE tenant_id = $1 AND id = $2`;

/** $1 tenant, $2 after id (or null), $3 limit: keyset pagination by id. */
export const LIST_SCHEDULES = `
SELECT ${SCHEDULE_COLUMNS} FROM schedules
 WHERE tenant_id = $1 AND ($2::uuid IS NULL OR id > $2::uuid)
 ORDER BY id LIMIT $3`;

/**
 * $1 schedule id, $2 limit → the latest occurrences with their task's state
 * (NULL status when the task's partition was dropped by retention).
 */
export const OCCURRENCE_HISTORY = `
SELECT ${ms("o.scheduled_for")} AS scheduled_for_ms, o.outcome, o.catch_up, o.task_id,
       ${ms("o.task_run_at")} AS run_at_ms, t.status, t.attempt
  FROM schedule_occurrences o
  LEFT JOIN tasks t ON t.id = o.task_id AND t.run_at = o.task_run_at
 WHERE o.schedule_id = $1
 ORDER BY o.scheduled_for DESC
 LIMIT $2`;

/**
 * Cancels the not-yet-started tasks of occurrences after $3 (all when NULL)
 * and forgets those occurrences, so that they can be planned again (after a
 * resume or a change of timing). A started occurrence keeps its row: it
 * stays the one execution of that occurrence.
 * $1 tenant, $2 schedule id, $3 after_ms (nullable), $4 now_ms, $5 cancellable statuses
 * → the ids of the tasks cancelled.
 */
export const CANCEL_FUTURE_OCCURRENCES = `
WITH future AS (
  SELECT o.scheduled_for, o.task_id, o.task_run_at FROM schedule_occurrences o
   WHERE o.tenant_id = $1 AND o.schedule_id = $2
     AND ($3::float8 IS NULL OR o.scheduled_for > ${ts("$3::float8")})
),
cancelled AS (
  UPDATE tasks t
     SET status = 'CANCELLED', cancelled_at = ${ts("$4")}, updated_at = ${ts("$4")}
    FROM future f
   WHERE t.id = f.task_id AND t.run_at = f.task_run_at AND t.status = ANY($5::text[])
  RETURNING t.id
),
forgotten AS (
  DELETE FROM schedule_occurrences o USING future f
   WHERE o.schedule_id = $2 AND o.scheduled_for = f.scheduled_for
     AND (f.task_id IS NULL OR f.task_id IN (SELECT c.id FROM cancelled c))
)
SELECT id FROM cancelled`;

/** $1 tenant, $2 id, then the fields as in INSERT_SCHEDULE from $3 → the new row. */
export const UPDATE_SCHEDULE = `
UPDATE schedules
   SET name = $3, expression = $4, time_zone = $5, type = $6, payload = $7::jsonb, priority = $8,
       max_attempts = $9, timeout_ms = $10, backoff_strategy = $11, backoff_base_ms = $12,
       backoff_max_ms = $13, misfire_policy = $14, overlap_policy = $15, jitter_ms = $16,
       expect_within_ms = $17, paused = $18, planned_through = ${ts("$19")},
       next_occurrence_at = ${ts("$20")}, updated_at = ${ts("$21")}, version = version + 1
 WHERE tenant_id = $1 AND id = $2
RETURNING ${SCHEDULE_COLUMNS}`;

export const DELETE_SCHEDULE = "DELETE FROM schedules WHERE tenant_id = $1 AND id = $2";

/** $1 tenant, $2 api key, $3 action, $4 task ids, $5 details jsonb, $6 now_ms. */
export const AUDIT = `
INSERT INTO audit_log (tenant_id, api_key_id, action, task_ids, details, at)
VALUES ($1, $2, $3, $4::uuid[], $5::jsonb, ${ts("$6")})`;
