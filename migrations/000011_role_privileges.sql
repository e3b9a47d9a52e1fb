-- 000011: a least-privilege database role for each background role
-- (docs/operations.md, "Database roles"). The owner (who runs migrations)
-- keeps the DDL; the API has had chronofence_api since 000001.
--
--   chronofence_dispatch  the dispatcher, pre-loader and reconciler (one pool
--                         per process): arms tasks, sweeps SCHEDULED ones,
--                         re-arms stale ones, fails expired executions (with
--                         their dead letters and workflow releases), and
--                         buries tasks whose envelope Kafka can never accept.
--   chronofence_worker    the Node worker: fenced start, heartbeat, complete,
--                         fail, interrupt, hand-back, dead letters, releases,
--                         parents' results. It runs tenants' handler code in
--                         its process, so it gets the least.
--   chronofence_planner   the cron planner: schedules' cursors, occurrences,
--                         the tasks they create, buffered releases.
-- The watchdog reaches Chronofence only through the HTTP API: no role.
--
-- All three are NOLOGIN: a process connects as a login role that is a member
-- (or as a superuser in development) and assumes its role at connection
-- start (`-c role=...`, CF_*_DATABASE_ROLE). None is the owner nor has
-- BYPASSRLS, so row-level security applies to them; since they work across
-- tenants, each gets a policy that lets it see every tenant's rows of the
-- tables it uses, and nothing on the others (api_keys above all).
--
-- Writes are granted column by column where a role changes only some
-- columns: the dispatcher cannot write a result or a payload, the planner
-- cannot touch a running task's lease. No role may DELETE tasks. Leases are
-- never deleted directly either (a deleted shard lease would restart its
-- epoch, the fencing token): cf_delete_expired_members, SECURITY DEFINER,
-- deletes only expired membership rows (`node:...`).

DO $$
DECLARE
  v_role text;
BEGIN
  FOREACH v_role IN ARRAY ARRAY['chronofence_dispatch', 'chronofence_worker', 'chronofence_planner']
  LOOP
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = v_role) THEN
        EXECUTE format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE',
                       v_role);
      END IF;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL; -- roles are cluster-wide: another database's migration created it just now
    END;
  END LOOP;
END
$$;

GRANT USAGE ON SCHEMA public TO chronofence_dispatch, chronofence_worker, chronofence_planner;

-- Leases: the dispatch roles and the planner hold some (membership, shards, leader, plan);
-- a worker holds none (an attempt's lease is in its task row).
GRANT SELECT, INSERT, UPDATE ON leases TO chronofence_dispatch, chronofence_planner;

CREATE FUNCTION cf_delete_expired_members(p_names text[], p_now timestamptz)
  RETURNS SETOF text
  LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    DELETE FROM leases
     WHERE name = ANY (p_names) AND name LIKE 'node:%' AND expires_at <= p_now
    RETURNING name
  $$;
REVOKE ALL ON FUNCTION cf_delete_expired_members(text[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION cf_delete_expired_members(text[], timestamptz)
  TO chronofence_dispatch, chronofence_planner;

-- The dispatch roles.
GRANT SELECT ON tasks TO chronofence_dispatch;
GRANT UPDATE (status, fencing_token, armed_at, dispatch_shard, dispatch_epoch, run_at, attempt,
              last_error, lease_expires_at, failed_at, dead_at, cancelled_at, skipped_at,
              updated_at)
  ON tasks TO chronofence_dispatch;
GRANT SELECT (id, grace_ms) ON tenants TO chronofence_dispatch;
GRANT USAGE ON SEQUENCE fencing_token_seq TO chronofence_dispatch;
GRANT INSERT ON dead_letters TO chronofence_dispatch;
GRANT SELECT (tenant_id, idempotency_key), UPDATE (task_run_at) ON idempotency_keys
  TO chronofence_dispatch;

-- The worker.
GRANT SELECT ON tasks TO chronofence_worker;
GRANT UPDATE (status, attempt, lease_owner, lease_expires_at, started_at, completed_at, result,
              run_at, fencing_token, last_error, failed_at, dead_at, cancelled_at, skipped_at,
              updated_at)
  ON tasks TO chronofence_worker;
GRANT USAGE ON SEQUENCE fencing_token_seq TO chronofence_worker;
GRANT INSERT ON dead_letters TO chronofence_worker;
GRANT SELECT (tenant_id, idempotency_key), UPDATE (task_run_at) ON idempotency_keys
  TO chronofence_worker;

-- Both end tasks of workflows: the releaser (cf_release_dependents) runs in their transactions.
GRANT SELECT, UPDATE (status, pending_nodes, dead_nodes, updated_at, finished_at) ON workflows
  TO chronofence_dispatch, chronofence_worker;
GRANT SELECT, UPDATE (state, task_run_at, parents_completed, parents_dead, parents_skipped,
                      parents_cancelled) ON workflow_nodes
  TO chronofence_dispatch, chronofence_worker;
GRANT SELECT ON workflow_edges TO chronofence_dispatch, chronofence_worker;

-- The planner.
GRANT SELECT, UPDATE (planned_through, next_occurrence_at) ON schedules TO chronofence_planner;
GRANT SELECT, INSERT, UPDATE (outcome, task_run_at) ON schedule_occurrences TO chronofence_planner;
GRANT SELECT, INSERT, UPDATE (status, run_at, updated_at) ON tasks TO chronofence_planner;

-- Row-level security: these roles work across tenants, on the tables they were granted.
CREATE POLICY tasks_background ON tasks
  TO chronofence_dispatch, chronofence_worker, chronofence_planner USING (true) WITH CHECK (true);
CREATE POLICY idempotency_keys_background ON idempotency_keys
  TO chronofence_dispatch, chronofence_worker USING (true) WITH CHECK (true);
CREATE POLICY dead_letters_background ON dead_letters
  TO chronofence_dispatch, chronofence_worker USING (true) WITH CHECK (true);
CREATE POLICY workflows_background ON workflows
  TO chronofence_dispatch, chronofence_worker USING (true) WITH CHECK (true);
CREATE POLICY workflow_nodes_background ON workflow_nodes
  TO chronofence_dispatch, chronofence_worker USING (true) WITH CHECK (true);
CREATE POLICY workflow_edges_background ON workflow_edges
  TO chronofence_dispatch, chronofence_worker USING (true) WITH CHECK (true);
CREATE POLICY schedules_background ON schedules
  TO chronofence_planner USING (true) WITH CHECK (true);
CREATE POLICY schedule_occurrences_background ON schedule_occurrences
  TO chronofence_planner USING (true) WITH CHECK (true);
