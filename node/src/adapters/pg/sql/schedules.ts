/**
 * The API's schedule statements (tables in migrations/000006_schedules.sql).
 * All run inside withTenant, so row-level security scopes them as well as
 * their WHERE clauses. Times cross the wire as epoch ms (float8).
 */
import { sqlEpochMs, sqlTimestamptz } from "../epoch-ms.js";

/** The columns a Schedule is read from, with times as epoch ms. */
export const SCHEDULE_COLUMNS = `
  id, tenant_id, name, expression, time_zone, type, payload, priority, max_attempts, timeout_ms,
  backoff_strategy, backoff_base_ms, backoff_max_ms, misfire_policy, overlap_policy, jitter_ms,
  expect_within_ms, paused, version::float8 AS version, ${sqlEpochMs("planned_through")} AS planned_through_ms,
  ${sqlEpochMs("next_occurrence_at")} AS next_occurrence_ms, ${sqlEpochMs("created_at")} AS created_at_ms,
  ${sqlEpochMs("updated_at")} AS updated_at_ms`;

/**
 * insert-schedule: $1 id, $2 tenant, $3 name, $4 expression, $5 time_zone, $6 type,
 * $7 payload (json text), $8 priority, $9 max_attempts, $10 timeout_ms, $11 backoff_strategy,
 * $12 base_ms, $13 max_ms, $14 misfire, $15 overlap, $16 jitter_ms, $17 expect_within_ms,
 * $18 paused, $19 plan_shard, $20 planned_through_ms, $21 next_occurrence_ms, $22 now_ms.
 * Locks: the new row only.
 * → 1 row (SCHEDULE_COLUMNS), or 0 when the name is taken.
 */
export const INSERT_SCHEDULE = `
INSERT INTO schedules (id, tenant_id, name, expression, time_zone, type, payload, priority,
                       max_attempts, timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
                       misfire_policy, overlap_policy, jitter_ms, expect_within_ms, paused,
                       plan_shard, planned_through, next_occurrence_at, version, created_at,
                       updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19,
        ${sqlTimestamptz("$20")}, ${sqlTimestamptz("$21")}, 1, ${sqlTimestamptz("$22")}, ${sqlTimestamptz("$22")})
ON CONFLICT (tenant_id, name) DO NOTHING
RETURNING ${SCHEDULE_COLUMNS}`;

/**
 * lock-schedule: $1 tenant, $2 id. Locks: the row, FOR UPDATE, to the end of the transaction.
 * → 0 or 1 row (SCHEDULE_COLUMNS).
 */
export const LOCK_SCHEDULE = `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE tenant_id = $1 AND id = $2 FOR UPDATE`;

/** get-schedule: $1 tenant, $2 id. Locks: nothing. → 0 or 1 row (SCHEDULE_COLUMNS). */
export const GET_SCHEDULE = `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE tenant_id = $1 AND id = $2`;

/**
 * list-schedules: $1 tenant, $2 after id (or null), $3 limit: keyset pagination by id.
 * Locks: nothing. → up to $3 rows (SCHEDULE_COLUMNS).
 */
export const LIST_SCHEDULES = `
SELECT ${SCHEDULE_COLUMNS} FROM schedules
 WHERE tenant_id = $1 AND ($2::uuid IS NULL OR id > $2::uuid)
 ORDER BY id LIMIT $3`;

/**
 * occurrence-history: $1 schedule id, $2 limit. Locks: nothing.
 * → its latest occurrences (scheduled_for_ms, outcome, catch_up, task_id,
 *   run_at_ms); their tasks are read by TASK_STATES.
 */
export const OCCURRENCE_HISTORY = `
SELECT ${sqlEpochMs("scheduled_for")} AS scheduled_for_ms, outcome, catch_up, task_id,
       ${sqlEpochMs("task_run_at")} AS run_at_ms
  FROM schedule_occurrences
 WHERE schedule_id = $1
 ORDER BY scheduled_for DESC
 LIMIT $2`;

/**
 * future-occurrences: $1 tenant, $2 schedule id, $3 after_ms (nullable: all).
 * Locks: nothing. → its occurrences after that instant (scheduled_for_ms, task_id, run_at_ms).
 */
export const FUTURE_OCCURRENCES = `
SELECT ${sqlEpochMs("scheduled_for")} AS scheduled_for_ms, task_id, ${sqlEpochMs("task_run_at")} AS run_at_ms
  FROM schedule_occurrences
 WHERE tenant_id = $1 AND schedule_id = $2
   AND ($3::float8 IS NULL OR scheduled_for > ${sqlTimestamptz("$3::float8")})`;

/**
 * cancel-tasks: $1 task ids, $2 their run_at (timestamptz[], so the day
 * partitions are pruned at planning), $3 now_ms, $4 cancellable statuses, $5 tenant_id.
 * Locks: the rows it updates. → the ids cancelled.
 */
export const CANCEL_TASKS = `
UPDATE tasks
   SET status = 'CANCELLED', cancelled_at = ${sqlTimestamptz("$3")}, updated_at = ${sqlTimestamptz("$3")}
 WHERE tenant_id = $5 AND id = ANY($1::uuid[]) AND run_at = ANY($2::timestamptz[])
   AND status = ANY($4::text[])
RETURNING id`;

/**
 * forget-occurrences: $1 schedule id, $2 scheduled_for (float8 ms[], as
 * read): forgets those occurrences, so that they can be planned again (after
 * a resume or a change of timing). Locks: the rows it deletes. → no rows.
 */
export const FORGET_OCCURRENCES = `
DELETE FROM schedule_occurrences o
 USING unnest($2::float8[]) AS f (scheduled_for_ms)
 WHERE o.schedule_id = $1 AND o.scheduled_for = ${sqlTimestamptz("f.scheduled_for_ms")}`;

/**
 * update-schedule: $1 tenant, $2 id, $3..$18 the fields as in INSERT_SCHEDULE,
 * $19 planned_through_ms, $20 next_occurrence_ms, $21 now_ms.
 * Locks: the row (held already: LOCK_SCHEDULE). → the new row (SCHEDULE_COLUMNS).
 */
export const UPDATE_SCHEDULE = `
UPDATE schedules
   SET name = $3, expression = $4, time_zone = $5, type = $6, payload = $7::jsonb, priority = $8,
       max_attempts = $9, timeout_ms = $10, backoff_strategy = $11, backoff_base_ms = $12,
       backoff_max_ms = $13, misfire_policy = $14, overlap_policy = $15, jitter_ms = $16,
       expect_within_ms = $17, paused = $18, planned_through = ${sqlTimestamptz("$19")},
       next_occurrence_at = ${sqlTimestamptz("$20")}, updated_at = ${sqlTimestamptz("$21")}, version = version + 1
 WHERE tenant_id = $1 AND id = $2
RETURNING ${SCHEDULE_COLUMNS}`;

/**
 * delete-schedule: $1 tenant, $2 id. Locks: the row (held already:
 * LOCK_SCHEDULE) and its occurrences (ON DELETE CASCADE). → no rows.
 */
export const DELETE_SCHEDULE = "DELETE FROM schedules WHERE tenant_id = $1 AND id = $2";

/**
 * audit: $1 tenant, $2 api key, $3 action, $4 task ids, $5 details jsonb, $6 now_ms.
 * Locks: the new row only. → no rows.
 */
export const AUDIT = `
INSERT INTO audit_log (tenant_id, api_key_id, action, task_ids, details, at)
VALUES ($1, $2, $3, $4::uuid[], $5::jsonb, ${sqlTimestamptz("$6")})`;
