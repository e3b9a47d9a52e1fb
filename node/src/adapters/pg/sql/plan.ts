/**
 * The planner's statements; the functions are in migrations/000006_schedules.sql.
 * Times cross the wire as epoch ms (float8).
 */

/**
 * due-schedules: $1 shard, $2 allow_until_ms, $3 overlap_until_ms, $4 limit
 * → schedules to plan, earliest next occurrence first. The overlap facts
 * are looked up only for schedules whose policy reads them.
 */
export const DUE_SCHEDULES = `
SELECT s.id, s.tenant_id, s.expression, s.time_zone, s.misfire_policy, s.overlap_policy,
       s.jitter_ms, s.version::float8 AS version,
       (extract(epoch FROM s.planned_through) * 1000)::float8 AS planned_through_ms,
       coalesce(prev.in_progress, false) AS previous_in_progress,
       buf.schedule_id IS NOT NULL AS buffered
  FROM schedules s
  LEFT JOIN LATERAL (
    SELECT cf_task_in_progress(t.status, t.attempt) AS in_progress
      FROM schedule_occurrences p
      JOIN tasks t ON t.id = p.task_id AND t.run_at = p.task_run_at
     WHERE p.schedule_id = s.id AND p.task_id IS NOT NULL AND p.outcome <> 'buffered'
     ORDER BY p.scheduled_for DESC
     LIMIT 1
  ) prev ON s.overlap_policy <> 'allow'
  LEFT JOIN LATERAL (
    SELECT b.schedule_id FROM schedule_occurrences b
      JOIN tasks t ON t.id = b.task_id AND t.run_at = b.task_run_at AND t.status = 'WAITING'
     WHERE b.schedule_id = s.id AND b.outcome = 'buffered'
     LIMIT 1
  ) buf ON s.overlap_policy = 'buffer_one'
 WHERE s.plan_shard = $1 AND NOT s.paused
   AND s.next_occurrence_at <= timestamptz 'epoch' + (CASE WHEN s.overlap_policy = 'allow'
                                   THEN $2::float8 ELSE $3::float8 END) * interval '1 millisecond'
 ORDER BY s.next_occurrence_at
 LIMIT $4`;

/** $1 cursors jsonb, $2 occurrences jsonb, $3 lease, $4 owner, $5 epoch, $6 now_ms. */
export const PLAN_OCCURRENCES = `
SELECT task_id, tenant_id, run_at_ms
  FROM cf_plan_occurrences($1::jsonb, $2::jsonb, $3, $4, $5,
                           timestamptz 'epoch' + $6 * interval '1 millisecond')`;

/** $1 shards int[], $2 lease prefix, $3 owner, $4 epochs bigint[], $5 now_ms. */
export const RELEASE_BUFFERED = `
SELECT task_id, tenant_id, run_at_ms
  FROM cf_release_buffered($1::int[], $2, $3, $4::bigint[],
                           timestamptz 'epoch' + $5 * interval '1 millisecond')`;
