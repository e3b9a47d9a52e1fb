/**
 * The planner's statements (cf_plan_occurrences is in
 * migrations/000006_schedules.sql). Times cross the wire as epoch ms
 * (float8), except the run_at arrays that select tasks: those are bound as
 * timestamptz[] so that Postgres prunes the day partitions when it plans.
 */
import { sqlEpochMs, sqlTimestamptz } from "../epoch-ms.js";

/**
 * due-schedules: $1 shards int[], $2 allow_until_ms, $3 overlap_until_ms, $4 limit.
 * Locks: nothing.
 * → unpaused schedules of those shards due for planning, earliest next occurrence first.
 */
export const DUE_SCHEDULES = `
SELECT id, tenant_id, expression, time_zone, misfire_policy, overlap_policy, jitter_ms,
       version::float8 AS version, ${sqlEpochMs("planned_through")} AS planned_through_ms, plan_shard
  FROM schedules
 WHERE plan_shard = ANY($1::int[]) AND NOT paused
   AND next_occurrence_at <= ${sqlTimestamptz(
     "(CASE WHEN overlap_policy = 'allow' THEN $2::float8 ELSE $3::float8 END)",
   )}
 ORDER BY next_occurrence_at
 LIMIT $4`;

/**
 * previous-occurrences: $1 schedule ids, $2 before: scheduled_for bounds
 * (float8 ms, same order). Locks: nothing.
 * → for each, its latest earlier occurrence that has a task and is not
 *   buffered (the "previous run"): schedule_id, tenant_id, task_id, run_at_ms.
 */
export const PREVIOUS_OCCURRENCES = `
SELECT DISTINCT ON (c.schedule_id) c.schedule_id, p.tenant_id, p.task_id,
       ${sqlEpochMs("p.task_run_at")} AS run_at_ms
  FROM unnest($1::uuid[], $2::float8[]) AS c (schedule_id, before_ms)
  JOIN schedule_occurrences p
    ON p.schedule_id = c.schedule_id
   AND p.scheduled_for < ${sqlTimestamptz("c.before_ms")}
   AND p.task_id IS NOT NULL AND p.outcome <> 'buffered'
 ORDER BY c.schedule_id, p.scheduled_for DESC`;

/**
 * buffered-occurrences: $1 schedule ids. Locks: nothing.
 * → their buffered occurrences (schedule_id, scheduled_for_ms, tenant_id, task_id, run_at_ms).
 */
export const BUFFERED_OCCURRENCES = `
SELECT schedule_id, ${sqlEpochMs("scheduled_for")} AS scheduled_for_ms, tenant_id, task_id,
       ${sqlEpochMs("task_run_at")} AS run_at_ms
  FROM schedule_occurrences
 WHERE schedule_id = ANY($1::uuid[]) AND outcome = 'buffered'`;

/**
 * task-states: $1 task ids, $2 their run_at (timestamptz[], so the day
 * partitions are pruned at planning), $3 their tenants (uuid[]: the primary
 * key's first column). Locks: nothing. → (id, status, attempt).
 */
export const TASK_STATES = `
SELECT id, status, attempt FROM tasks
 WHERE tenant_id = ANY($3::uuid[]) AND id = ANY($1::uuid[]) AND run_at = ANY($2::timestamptz[])`;

/**
 * plan-occurrences: the planner's one write per pass; cf_plan_occurrences
 * (contract in migrations/000006_schedules.sql).
 * $1 cursors jsonb, $2 occurrences jsonb, $3 leases text[], $4 owner, $5 epochs bigint[], $6 now_ms.
 * Locks: the leases FOR SHARE, each schedule still at its version FOR UPDATE,
 * and the occurrences and tasks it inserts.
 * → the SCHEDULED tasks it created (task_id, tenant_id, run_at_ms); SQLSTATE
 *   CFL01 when a lease is no longer held.
 */
export const PLAN_OCCURRENCES = `
SELECT task_id, tenant_id, run_at_ms
  FROM cf_plan_occurrences($1::jsonb, $2::jsonb, $3::text[], $4, $5::bigint[],
                           ${sqlTimestamptz("$6")})`;

/**
 * fenced-shards: $1 shards int[], $2 epochs bigint[], $3 lease prefix, $4 owner, $5 now_ms.
 * Locks: those lease rows, FOR SHARE, so a takeover waits for this transaction.
 * → the shards whose lease is still (owner, epoch) and unexpired.
 */
export const FENCED_SHARDS = `
SELECT f.shard FROM unnest($1::int[], $2::bigint[]) AS f (shard, epoch)
  JOIN leases l ON l.name = $3 || f.shard AND l.owner = $4 AND l.epoch = f.epoch
               AND l.expires_at > ${sqlTimestamptz("$5")}
   FOR SHARE OF l`;

/**
 * buffered-in-shards: $1 shards int[].
 * Locks: the occurrences, FOR UPDATE OF o SKIP LOCKED (those another planner holds are skipped).
 * → buffered occurrences of their schedules (schedule_id, scheduled_for_ms, tenant_id, task_id,
 *   run_at_ms).
 */
export const BUFFERED_IN_SHARDS = `
SELECT o.schedule_id, ${sqlEpochMs("o.scheduled_for")} AS scheduled_for_ms, o.tenant_id, o.task_id,
       ${sqlEpochMs("o.task_run_at")} AS run_at_ms
  FROM schedule_occurrences o JOIN schedules s ON s.id = o.schedule_id
 WHERE o.outcome = 'buffered' AND s.plan_shard = ANY($1::int[])
   FOR UPDATE OF o SKIP LOCKED`;

/**
 * release-tasks: $1 task ids, $2 their run_at (timestamptz[]), $3 now_ms, $4 their tenants (uuid[]).
 * Locks: the rows it updates.
 * → the buffered tasks still WAITING, now SCHEDULED and due now (moved to
 *   today's partition): id, tenant_id, run_at_ms.
 */
export const RELEASE_TASKS = `
UPDATE tasks
   SET status = 'SCHEDULED', run_at = ${sqlTimestamptz("$3")},
       updated_at = ${sqlTimestamptz("$3")}
 WHERE tenant_id = ANY($4::uuid[]) AND id = ANY($1::uuid[]) AND run_at = ANY($2::timestamptz[])
   AND status = 'WAITING'
RETURNING id, tenant_id, ${sqlEpochMs("run_at")} AS run_at_ms`;

/**
 * mark-released: $1 schedule ids, $2 scheduled_for (float8 ms, as read), $3
 * released task ids, $4 now_ms: those occurrences are no longer buffered
 * (released, or their task was cancelled while it waited).
 * Locks: the rows it updates (held already: BUFFERED_IN_SHARDS). → no rows.
 */
export const MARK_RELEASED = `
UPDATE schedule_occurrences o
   SET outcome = 'released',
       task_run_at = CASE WHEN o.task_id = ANY($3::uuid[])
                          THEN ${sqlTimestamptz("$4")}
                          ELSE o.task_run_at END
  FROM unnest($1::uuid[], $2::float8[]) AS r (schedule_id, scheduled_for_ms)
 WHERE o.schedule_id = r.schedule_id
   AND o.scheduled_for = ${sqlTimestamptz("r.scheduled_for_ms")}`;
