-- 000006: cron schedules (domain/schedule.ts, domain/schedule-plan.ts).
--
-- schedules: one row per cron schedule. The task fields (type, payload,
--   priority, max_attempts, timeout_ms, backoff) are copied into every task
--   an occurrence creates. planned_through is the planner's cursor: every
--   occurrence at or before it has been decided. next_occurrence_at is the
--   first occurrence after it (NULL: never again), what the planner selects
--   on. plan_shard (hash of the id, like the hot-tier shards) partitions
--   planning between planner processes through `plan:<shard>` leases.
--   version grows with every change made through the API; the planner's
--   write names the version it planned from and is dropped if it moved.
-- schedule_occurrences: the uniqueness of an occurrence, (schedule_id,
--   scheduled_for) — scheduled_for is the nominal occurrence, before jitter;
--   the task's run_at (task_run_at, the partition key of tasks) may be later.
--   outcome: planned (task created SCHEDULED), buffered (task WAITING for the
--   previous run, overlap_policy buffer_one), released (a buffered task made
--   SCHEDULED), skipped_overlap (no task). Because tasks is partitioned by
--   run_at, this table is where "exactly once per occurrence" is enforced.
--
-- cf_plan_occurrences(p_schedules jsonb, p_occurrences jsonb, p_leases text[],
--                     p_owner text, p_epochs bigint[], p_now timestamptz)
--   RETURNS (task_id, tenant_id, run_at_ms): the SCHEDULED tasks it created.
--   The planner's one write per pass, fenced by the `plan:<shard>` leases of
--   the shards it covers (p_epochs[i] is the epoch of p_leases[i]); raises
--   SQLSTATE CFL01, naming the first lease, when one is no longer
--   (owner, epoch) and unexpired: nothing is written then.
--   p_schedules: [{id, version, planned_through_ms, next_occurrence_ms}];
--   p_occurrences: [{schedule_id, scheduled_for_ms, outcome, task_id, run_at_ms}].
--   Locks each schedule still at the given version (a concurrent PATCH or
--   DELETE wins: its schedule is skipped), inserts the occurrences ON
--   CONFLICT DO NOTHING and creates a task only for an occurrence it
--   inserted — two planners, a restart or a replay create it once — then
--   advances the cursor (never backwards). Runs as the login role: the
--   planner works across tenants.
--
-- Nothing here joins tasks on a column of another table: tasks has a
-- partition per day (hundreds with a long horizon), and such a join makes
-- Postgres plan every partition (seconds). Callers read occurrences first,
-- then their tasks with `id = ANY($ids) AND run_at = ANY($run_ats)`, which
-- prunes to the few partitions concerned when the statement is planned.

CREATE TABLE schedules (
  id uuid PRIMARY KEY,
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  expression text NOT NULL CHECK (length(expression) BETWEEN 1 AND 200),
  time_zone text NOT NULL,
  type text NOT NULL,
  payload jsonb NOT NULL,
  priority text NOT NULL CHECK (priority IN ('critical', 'standard', 'bulk')),
  max_attempts integer NOT NULL CHECK (max_attempts >= 1),
  timeout_ms integer NOT NULL CHECK (timeout_ms >= 1),
  backoff_strategy text NOT NULL CHECK (backoff_strategy IN ('exponential', 'fixed')),
  backoff_base_ms integer NOT NULL,
  backoff_max_ms integer NOT NULL,
  misfire_policy text NOT NULL CHECK (misfire_policy IN ('skip', 'fire_once', 'fire_all')),
  overlap_policy text NOT NULL CHECK (overlap_policy IN ('allow', 'skip', 'buffer_one')),
  jitter_ms integer NOT NULL CHECK (jitter_ms >= 0),
  expect_within_ms integer CHECK (expect_within_ms >= 1),
  paused boolean NOT NULL,
  plan_shard smallint NOT NULL,
  planned_through timestamptz NOT NULL,
  next_occurrence_at timestamptz,
  version bigint NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  UNIQUE (tenant_id, name)
);
-- The planner's search: due soon, in its shards, not paused.
CREATE INDEX schedules_plan_idx ON schedules (plan_shard, next_occurrence_at) WHERE NOT paused;
CREATE INDEX schedules_tenant_id_idx ON schedules (tenant_id, id);

CREATE TABLE schedule_occurrences (
  schedule_id uuid NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
  scheduled_for timestamptz NOT NULL,
  tenant_id uuid NOT NULL,
  outcome text NOT NULL CHECK (outcome IN ('planned', 'buffered', 'released', 'skipped_overlap')),
  task_id uuid,
  task_run_at timestamptz,
  catch_up boolean NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (schedule_id, scheduled_for),
  CHECK ((task_id IS NULL) = (outcome = 'skipped_overlap'))
);
CREATE INDEX schedule_occurrences_buffered_idx ON schedule_occurrences (schedule_id)
  WHERE outcome = 'buffered';

ALTER TABLE schedules ENABLE ROW LEVEL SECURITY;
ALTER TABLE schedule_occurrences ENABLE ROW LEVEL SECURITY;
CREATE POLICY schedules_tenant ON schedules
  USING (tenant_id = cf_current_tenant()) WITH CHECK (tenant_id = cf_current_tenant());
CREATE POLICY schedule_occurrences_tenant ON schedule_occurrences
  USING (tenant_id = cf_current_tenant()) WITH CHECK (tenant_id = cf_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON schedules TO chronofence_api;
GRANT SELECT, DELETE ON schedule_occurrences TO chronofence_api;

CREATE FUNCTION cf_plan_occurrences(p_schedules jsonb, p_occurrences jsonb, p_leases text[],
                                    p_owner text, p_epochs bigint[], p_now timestamptz)
  RETURNS TABLE (task_id uuid, tenant_id uuid, run_at_ms double precision)
  LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_stale text;
BEGIN
  PERFORM 1 FROM leases l
   WHERE l.name = ANY(p_leases) AND l.owner = p_owner AND l.expires_at > p_now
   FOR SHARE;
  SELECT w.name INTO v_stale
    FROM unnest(p_leases, p_epochs) AS w (name, epoch)
   WHERE NOT EXISTS (SELECT 1 FROM leases l
                      WHERE l.name = w.name AND l.owner = p_owner AND l.epoch = w.epoch
                        AND l.expires_at > p_now)
   LIMIT 1;
  IF v_stale IS NOT NULL THEN
    RAISE EXCEPTION 'planner lease % is no longer held', v_stale
      USING ERRCODE = 'CFL01', DETAIL = v_stale;
  END IF;

  RETURN QUERY
  WITH input AS (
    SELECT i.* FROM jsonb_to_recordset(p_schedules) AS i (
      id uuid, version bigint, planned_through_ms double precision,
      next_occurrence_ms double precision)
  ),
  locked AS (
    SELECT s.* FROM schedules s JOIN input i ON i.id = s.id
     WHERE s.version = i.version AND NOT s.paused
     ORDER BY s.id
       FOR UPDATE OF s
  ),
  claimed AS (
    INSERT INTO schedule_occurrences AS o
           (schedule_id, scheduled_for, tenant_id, outcome, task_id, task_run_at, catch_up,
            created_at)
    SELECT r.schedule_id, timestamptz 'epoch' + r.scheduled_for_ms * interval '1 millisecond',
           l.tenant_id, r.outcome, r.task_id,
           timestamptz 'epoch' + r.run_at_ms * interval '1 millisecond', r.catch_up, p_now
      FROM jsonb_to_recordset(p_occurrences) AS r (
             schedule_id uuid, scheduled_for_ms double precision, outcome text, task_id uuid,
             run_at_ms double precision, catch_up boolean)
      JOIN locked l ON l.id = r.schedule_id
    ON CONFLICT DO NOTHING
    RETURNING o.schedule_id, o.task_id, o.task_run_at, o.outcome
  ),
  created AS (
    INSERT INTO tasks AS t (id, tenant_id, type, payload, priority, status, run_at, max_attempts,
                            timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
                            schedule_id, created_at, updated_at)
    SELECT c.task_id, l.tenant_id, l.type, l.payload, l.priority,
           CASE c.outcome WHEN 'buffered' THEN 'WAITING' ELSE 'SCHEDULED' END,
           c.task_run_at, l.max_attempts, l.timeout_ms, l.backoff_strategy, l.backoff_base_ms,
           l.backoff_max_ms, l.id, p_now, p_now
      FROM claimed c JOIN locked l ON l.id = c.schedule_id
     WHERE c.task_id IS NOT NULL
    RETURNING t.id, t.tenant_id, t.run_at, t.status
  ),
  advanced AS (
    UPDATE schedules s
       SET planned_through = timestamptz 'epoch' + i.planned_through_ms * interval '1 millisecond',
           next_occurrence_at = timestamptz 'epoch' + i.next_occurrence_ms * interval '1 millisecond'
      FROM input i JOIN locked l ON l.id = i.id
     WHERE s.id = i.id
       AND s.planned_through < timestamptz 'epoch' + i.planned_through_ms * interval '1 millisecond'
  )
  SELECT c.id, c.tenant_id, (extract(epoch FROM c.run_at) * 1000)::double precision
    FROM created c
   WHERE c.status = 'SCHEDULED';
END
$$;
