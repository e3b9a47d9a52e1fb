-- 000007: DAG workflows.
--
-- A workflow's nodes are ordinary tasks (tasks.workflow_id, tasks.workflow_node):
-- roots are inserted SCHEDULED, the others WAITING until the releaser lets
-- them go. Beside them, three unpartitioned tables the releaser works on, so
-- it never has to look a task up without its run_at (which would probe every
-- day partition):
--   workflows       one row per workflow; its row lock serialises the
--                   releaser, cancellation and the final status (see below);
--                   pending_nodes counts nodes not yet terminal.
--   workflow_nodes  one row per node: its trigger rule, its state as the
--                   workflow sees it (WAITING, RELEASED, or the terminal
--                   state the releaser recorded), its task's run_at (exact
--                   while WAITING, and final once terminal), its release
--                   timing, and the tally of its parents' outcomes so far.
--   workflow_edges  parent → child; the primary key (parent_task_id, ...)
--                   makes "the children of this parent" one index range scan.
--
-- Concurrency. Every function below that changes a workflow's nodes first
-- locks its workflows row (FOR UPDATE) and keeps it to the end of the
-- caller's transaction. Two parents of one child completing at the same
-- instant in two transactions therefore run one after the other, and the
-- second sees the first's tally. Locking only the children's rows would
-- allow more parallelism but deadlocks as soon as skips propagate (two
-- releasers lock descendants in different orders), and would leave the
-- "was that the last node?" check racy. The cost: within one workflow,
-- terminal transitions commit one at a time (different workflows do not
-- wait for each other). Lock order everywhere: the workflow row, then task
-- rows. A caller that already holds a task row lock (a worker's fenced
-- completion) only ever holds the row of a RUNNING task, which nothing
-- under the workflow lock touches.

CREATE TABLE workflows (
  id uuid PRIMARY KEY,
  tenant_id uuid NOT NULL,
  status text NOT NULL CHECK (status IN ('RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED')),
  fail_fast boolean NOT NULL,
  node_count integer NOT NULL CHECK (node_count BETWEEN 1 AND 10000),
  pending_nodes integer NOT NULL CHECK (pending_nodes >= 0),
  dead_nodes integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  finished_at timestamptz
);
CREATE INDEX workflows_tenant_id_idx ON workflows (tenant_id, id);

CREATE TABLE workflow_nodes (
  task_id uuid PRIMARY KEY,
  workflow_id uuid NOT NULL REFERENCES workflows (id),
  tenant_id uuid NOT NULL,
  node_key text NOT NULL,
  trigger_rule text NOT NULL
    CHECK (trigger_rule IN ('all_success', 'all_done', 'one_success', 'one_failed', 'none_failed')),
  state text NOT NULL
    CHECK (state IN ('WAITING', 'RELEASED', 'COMPLETED', 'DEAD', 'SKIPPED', 'CANCELLED')),
  task_run_at timestamptz NOT NULL,
  -- On release: run_at = greatest(release instant, not_before, release instant + delay_ms).
  not_before timestamptz,
  delay_ms bigint NOT NULL CHECK (delay_ms >= 0),
  parents_total integer NOT NULL,
  parents_completed integer NOT NULL DEFAULT 0,
  parents_dead integer NOT NULL DEFAULT 0,
  parents_skipped integer NOT NULL DEFAULT 0,
  parents_cancelled integer NOT NULL DEFAULT 0,
  UNIQUE (workflow_id, node_key)
);

CREATE TABLE workflow_edges (
  parent_task_id uuid NOT NULL,
  child_task_id uuid NOT NULL,
  workflow_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  parent_key text NOT NULL,
  child_key text NOT NULL,
  PRIMARY KEY (parent_task_id, child_task_id)
);
-- A child's parents (their results, for the child's handler).
CREATE INDEX workflow_edges_child_idx ON workflow_edges (child_task_id);

-- Cancelling a workflow's pending tasks, whatever their run_at now is
-- (a retry moves it).
CREATE INDEX tasks_workflow_idx ON tasks (workflow_id, status) WHERE workflow_id IS NOT NULL;

ALTER TABLE workflows ENABLE ROW LEVEL SECURITY;
ALTER TABLE workflow_nodes ENABLE ROW LEVEL SECURITY;
ALTER TABLE workflow_edges ENABLE ROW LEVEL SECURITY;
CREATE POLICY workflows_tenant ON workflows
  USING (tenant_id = cf_current_tenant()) WITH CHECK (tenant_id = cf_current_tenant());
CREATE POLICY workflow_nodes_tenant ON workflow_nodes
  USING (tenant_id = cf_current_tenant()) WITH CHECK (tenant_id = cf_current_tenant());
CREATE POLICY workflow_edges_tenant ON workflow_edges
  USING (tenant_id = cf_current_tenant()) WITH CHECK (tenant_id = cf_current_tenant());
GRANT SELECT, INSERT, UPDATE ON workflows, workflow_nodes TO chronofence_api;
GRANT SELECT, INSERT ON workflow_edges TO chronofence_api;

-- cf_trigger_decision(rule, total, completed, dead, skipped, cancelled) → 'release' | 'skip' | 'wait'
--   The table of node/src/domain/workflow-trigger.ts, which is the reference
--   (an integration test compares the two on every small tally).
CREATE FUNCTION cf_trigger_decision(p_rule text, p_total integer, p_completed integer,
                                    p_dead integer, p_skipped integer, p_cancelled integer)
  RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN p_total = 0 THEN 'release'
    WHEN p_rule = 'all_success' THEN
      CASE WHEN p_completed = p_total THEN 'release'
           WHEN p_dead + p_skipped + p_cancelled > 0 THEN 'skip' ELSE 'wait' END
    WHEN p_rule = 'all_done' THEN
      CASE WHEN p_completed + p_dead + p_skipped + p_cancelled = p_total THEN 'release' ELSE 'wait' END
    WHEN p_rule = 'one_success' THEN
      CASE WHEN p_completed > 0 THEN 'release'
           WHEN p_dead + p_skipped + p_cancelled = p_total THEN 'skip' ELSE 'wait' END
    WHEN p_rule = 'one_failed' THEN
      CASE WHEN p_dead > 0 THEN 'release'
           WHEN p_completed + p_skipped + p_cancelled = p_total THEN 'skip' ELSE 'wait' END
    WHEN p_rule = 'none_failed' THEN
      CASE WHEN p_dead > 0 THEN 'skip'
           WHEN p_completed + p_skipped + p_cancelled = p_total THEN 'release' ELSE 'wait' END
  END
$$;

-- cf_insert_workflow(p_workflow jsonb, p_nodes jsonb, p_now timestamptz) RETURNS void
--   One statement, one commit: the workflow, its node tasks, nodes, edges and
--   audit row. p_workflow: {id, tenant_id, fail_fast, api_key_id, request_id}.
--   p_nodes: the rows of cf_insert_tasks (id, tenant_id, type, payload,
--   priority, run_at_ms, max_attempts, timeout_ms, backoff_*, created_at_ms;
--   no idempotency key) plus key, trigger_rule, not_before_ms, delay_ms and
--   depends_on (an array of keys). Nodes without depends_on are SCHEDULED,
--   the others WAITING. Validation (keys, cycles) is the caller's.
CREATE FUNCTION cf_insert_workflow(p_workflow jsonb, p_nodes jsonb, p_now timestamptz)
  RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_id uuid := (p_workflow->>'id')::uuid;
  v_tenant uuid := (p_workflow->>'tenant_id')::uuid;
BEGIN
  PERFORM set_config('app.tenant_id', v_tenant::text, true);
  CREATE TEMP TABLE cf_wf_input ON COMMIT DROP AS
    SELECT r.*, timestamptz 'epoch' + r.run_at_ms * interval '1 millisecond' AS run_at,
           timestamptz 'epoch' + r.not_before_ms * interval '1 millisecond' AS not_before
      FROM jsonb_to_recordset(p_nodes) AS r (
        id uuid, tenant_id uuid, type text, payload jsonb, priority text, run_at_ms bigint,
        max_attempts integer, timeout_ms integer, backoff_strategy text, backoff_base_ms integer,
        backoff_max_ms integer, created_at_ms bigint, key text, trigger_rule text,
        not_before_ms bigint, delay_ms bigint, depends_on jsonb);

  INSERT INTO workflows (id, tenant_id, status, fail_fast, node_count, pending_nodes, created_at, updated_at)
  SELECT v_id, v_tenant, 'RUNNING', (p_workflow->>'fail_fast')::boolean, count(*), count(*), p_now, p_now
    FROM cf_wf_input;

  INSERT INTO tasks (id, tenant_id, type, payload, priority, status, run_at, max_attempts,
                     timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
                     workflow_id, workflow_node, created_at, updated_at)
  SELECT i.id, v_tenant, i.type, coalesce(i.payload, 'null'::jsonb), i.priority,
         CASE WHEN jsonb_array_length(i.depends_on) = 0 THEN 'SCHEDULED' ELSE 'WAITING' END,
         i.run_at, i.max_attempts, i.timeout_ms, i.backoff_strategy, i.backoff_base_ms,
         i.backoff_max_ms, v_id, i.key, p_now, p_now
    FROM cf_wf_input i;

  INSERT INTO workflow_nodes (task_id, workflow_id, tenant_id, node_key, trigger_rule, state,
                              task_run_at, not_before, delay_ms, parents_total)
  SELECT i.id, v_id, v_tenant, i.key, i.trigger_rule,
         CASE WHEN jsonb_array_length(i.depends_on) = 0 THEN 'RELEASED' ELSE 'WAITING' END,
         i.run_at, i.not_before, i.delay_ms, jsonb_array_length(i.depends_on)
    FROM cf_wf_input i;

  INSERT INTO workflow_edges (parent_task_id, child_task_id, workflow_id, tenant_id, parent_key, child_key)
  SELECT p.id, c.id, v_id, v_tenant, p.key, c.key
    FROM cf_wf_input c
   CROSS JOIN LATERAL jsonb_array_elements_text(c.depends_on) AS d (parent_key)
    JOIN cf_wf_input p ON p.key = d.parent_key;

  INSERT INTO audit_log (tenant_id, api_key_id, action, request_id, task_ids, details, at)
  SELECT v_tenant, (p_workflow->>'api_key_id')::uuid, 'workflow.create', p_workflow->>'request_id',
         array_agg(i.id), jsonb_build_object('workflow_id', v_id, 'nodes', count(*)), p_now
    FROM cf_wf_input i;
  DROP TABLE cf_wf_input;
END
$$;
GRANT EXECUTE ON FUNCTION cf_insert_workflow(jsonb, jsonb, timestamptz) TO chronofence_api;

-- cf_cancel_pending_nodes(p_workflow_id uuid, p_now timestamptz)
--   RETURNS TABLE (task_id uuid, tenant_id uuid)
--   Cancels every WAITING, SCHEDULED or ARMED task of the workflow (a
--   RUNNING one finishes on its own; its fenced start already happened) and
--   records CANCELLED for their nodes. The caller holds the workflow row
--   lock and adjusts pending_nodes by the number of rows returned.
CREATE FUNCTION cf_cancel_pending_nodes(p_workflow_id uuid, p_now timestamptz)
  RETURNS TABLE (task_id uuid, tenant_id uuid) LANGUAGE sql AS $$
  WITH cancelled AS (
    UPDATE tasks t
       SET status = 'CANCELLED', cancelled_at = p_now, updated_at = p_now
     WHERE t.workflow_id = p_workflow_id AND t.status IN ('WAITING', 'SCHEDULED', 'ARMED')
    RETURNING t.id, t.tenant_id, t.run_at
  ),
  recorded AS (
    UPDATE workflow_nodes n SET state = 'CANCELLED', task_run_at = c.run_at
      FROM cancelled c
     WHERE n.workflow_id = p_workflow_id AND n.task_id = c.id AND n.state IN ('WAITING', 'RELEASED')
    RETURNING n.task_id, n.tenant_id
  )
  SELECT r.task_id, r.tenant_id FROM recorded r
$$;
GRANT EXECUTE ON FUNCTION cf_cancel_pending_nodes(uuid, timestamptz) TO chronofence_api;

-- cf_finish_nodes(p_workflow_id uuid, p_terminal integer, p_dead integer, p_now timestamptz)
--   RETURNS TABLE (status text, finished boolean)
--   Counts p_terminal more nodes terminal (p_dead of them DEAD). When none is
--   left pending the workflow ends: CANCELLED if it was cancelled, FAILED if
--   a node died, COMPLETED otherwise. `finished` is true only for the call
--   that ended it. The caller holds the workflow row lock.
CREATE FUNCTION cf_finish_nodes(p_workflow_id uuid, p_terminal integer, p_dead integer,
                                p_now timestamptz)
  RETURNS TABLE (status text, finished boolean) LANGUAGE sql AS $$
  UPDATE workflows w
     SET pending_nodes = w.pending_nodes - p_terminal,
         dead_nodes = w.dead_nodes + p_dead,
         updated_at = p_now,
         status = CASE
           WHEN w.pending_nodes - p_terminal > 0 OR w.status <> 'RUNNING' THEN w.status
           WHEN w.dead_nodes + p_dead > 0 THEN 'FAILED'
           ELSE 'COMPLETED' END,
         finished_at = CASE WHEN w.pending_nodes - p_terminal = 0 THEN p_now ELSE w.finished_at END
   WHERE w.id = p_workflow_id
  RETURNING w.status, w.pending_nodes = 0 AND p_terminal > 0
$$;
GRANT EXECUTE ON FUNCTION cf_finish_nodes(uuid, integer, integer, timestamptz) TO chronofence_api;

-- cf_release_dependents(p_task_id uuid, p_run_at timestamptz, p_now timestamptz)
--   RETURNS TABLE (kind text, task_id uuid, tenant_id uuid, run_at_ms float8, detail text)
--   Call it INSIDE the transaction that moved task (p_task_id, p_run_at) to a
--   terminal state (a worker's fenced completion or death, a cancel), after
--   that update. It records the task's outcome for its workflow and, in the
--   same transaction:
--    - counts the outcome in each child's tally and asks each WAITING
--      child's trigger rule: release → SCHEDULED at greatest(p_now,
--      not_before, p_now + delay_ms); skip → SKIPPED, counted in turn by its
--      own children (repeated until nothing more changes);
--    - with fail_fast, a DEAD task instead cancels every pending node;
--    - ends the workflow when no node is left pending.
--   Rows returned: ('released', id, tenant, run_at_ms) for each released task
--   (the caller ZADDs them to the hot tier after its commit), ('skipped', ...)
--   and ('cancelled', ...) for the others changed, and ('finished', workflow
--   id, tenant, NULL, status) when this call ended the workflow.
--   Idempotent: an outcome is recorded once; a second call for the same
--   task returns no rows and changes nothing. A task outside any workflow, or
--   not terminal, also returns no rows (callers may skip the call when they
--   know workflow_id is NULL).
--   Every statement on tasks names the run_at of the rows it touches, as a
--   value (plan_cache_mode = force_custom_plan makes PL/pgSQL plan with the
--   values), so the planner prunes to those days' partitions instead of
--   locking every partition of the horizon. The exception is fail_fast's
--   cancel (cf_cancel_pending_nodes), which visits every partition: a retry
--   may have moved a released node's run_at, and only the execution store
--   knows where.
CREATE FUNCTION cf_release_dependents(p_task_id uuid, p_run_at timestamptz, p_now timestamptz)
  RETURNS TABLE (kind text, task_id uuid, tenant_id uuid, run_at_ms float8, detail text)
  LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
DECLARE
  v_status text;
  v_workflow uuid;
  v_tenant uuid;
  v_fail_fast boolean;
  v_frontier uuid[];
  v_release uuid[];
  v_release_at timestamptz[];
  v_skip uuid[];
  v_skip_at timestamptz[];
  v_state text;
  v_children uuid[];
  v_counts integer[];
  v_terminal integer := 1;
  v_cancelled integer;
  v_final record;
BEGIN
  SELECT t.status, t.workflow_id, t.tenant_id INTO v_status, v_workflow, v_tenant
    FROM tasks t WHERE t.id = p_task_id AND t.run_at = p_run_at;
  IF v_workflow IS NULL OR v_status NOT IN ('COMPLETED', 'DEAD', 'SKIPPED', 'CANCELLED') THEN
    RETURN;
  END IF;
  SELECT w.fail_fast INTO v_fail_fast FROM workflows w WHERE w.id = v_workflow FOR UPDATE;

  UPDATE workflow_nodes n SET state = v_status, task_run_at = p_run_at
   WHERE n.task_id = p_task_id AND n.state IN ('WAITING', 'RELEASED');
  IF NOT FOUND THEN
    RETURN;
  END IF;

  IF v_status = 'DEAD' AND v_fail_fast THEN
    RETURN QUERY
      SELECT 'cancelled'::text, c.task_id, c.tenant_id, NULL::float8, NULL::text
        FROM cf_cancel_pending_nodes(v_workflow, p_now) c;
    GET DIAGNOSTICS v_cancelled = ROW_COUNT;
    v_terminal := v_terminal + v_cancelled;
    v_frontier := '{}';
  ELSE
    v_frontier := ARRAY[p_task_id];
  END IF;

  -- Every node of a frontier ended the same way: first the task itself, then SKIPPED.
  v_state := v_status;
  WHILE cardinality(v_frontier) > 0 LOOP
    -- Count the frontier's outcomes in its children's tallies; ask each WAITING
    -- child's rule. Statements go through the primary keys with arrays of ids,
    -- so a plan stays an index lookup even while the statistics still see an
    -- empty table (a 10,000-node workflow is released right after its insert).
    SELECT coalesce(array_agg(e.child_task_id), '{}'), coalesce(array_agg(e.n), '{}')
      INTO v_children, v_counts
      FROM (SELECT ed.child_task_id, count(*)::integer AS n FROM workflow_edges ed
             WHERE ed.parent_task_id = ANY (v_frontier) GROUP BY ed.child_task_id) e;
    EXIT WHEN cardinality(v_children) = 0;
    WITH tallied AS (
      UPDATE workflow_nodes n
         SET parents_completed = n.parents_completed + CASE WHEN v_state = 'COMPLETED' THEN o.n ELSE 0 END,
             parents_dead = n.parents_dead + CASE WHEN v_state = 'DEAD' THEN o.n ELSE 0 END,
             parents_skipped = n.parents_skipped + CASE WHEN v_state = 'SKIPPED' THEN o.n ELSE 0 END,
             parents_cancelled = n.parents_cancelled + CASE WHEN v_state = 'CANCELLED' THEN o.n ELSE 0 END
        FROM unnest(v_children, v_counts) AS o (id, n)
       WHERE n.task_id = ANY (v_children) AND n.task_id = o.id AND n.state IN ('WAITING', 'RELEASED')
      RETURNING n.task_id, n.state, n.task_run_at,
                cf_trigger_decision(n.trigger_rule, n.parents_total, n.parents_completed,
                                    n.parents_dead, n.parents_skipped, n.parents_cancelled) AS decision
    )
    SELECT coalesce(array_agg(t.task_id) FILTER (WHERE t.state = 'WAITING' AND t.decision = 'release'), '{}'),
           coalesce(array_agg(DISTINCT t.task_run_at) FILTER (WHERE t.state = 'WAITING' AND t.decision = 'release'), '{}'),
           coalesce(array_agg(t.task_id) FILTER (WHERE t.state = 'WAITING' AND t.decision = 'skip'), '{}'),
           coalesce(array_agg(DISTINCT t.task_run_at) FILTER (WHERE t.state = 'WAITING' AND t.decision = 'skip'), '{}')
      INTO v_release, v_release_at, v_skip, v_skip_at
      FROM tallied t;

    -- An empty array would prune nothing: skip the statement instead.
    IF cardinality(v_release) > 0 THEN
      RETURN QUERY
        WITH released AS (
          UPDATE tasks t
             SET status = 'SCHEDULED',
                 run_at = greatest(p_now, n.not_before, p_now + n.delay_ms * interval '1 millisecond'),
                 updated_at = p_now
            FROM workflow_nodes n
           WHERE n.task_id = ANY (v_release) AND t.id = n.task_id AND t.run_at = n.task_run_at
             AND t.run_at = ANY (v_release_at) AND t.status = 'WAITING'
          RETURNING t.id, t.tenant_id, t.run_at
        ),
        recorded AS (
          UPDATE workflow_nodes n SET state = 'RELEASED', task_run_at = r.run_at
            FROM released r WHERE n.task_id = ANY (v_release) AND n.task_id = r.id
          RETURNING n.task_id
        )
        SELECT 'released'::text, r.id, r.tenant_id, (extract(epoch FROM r.run_at) * 1000)::float8, NULL::text
          FROM released r;
    END IF;

    v_frontier := '{}';
    IF cardinality(v_skip) > 0 THEN
      WITH skipped AS (
        UPDATE tasks t
           SET status = 'SKIPPED', skipped_at = p_now, updated_at = p_now
          FROM workflow_nodes n
         WHERE n.task_id = ANY (v_skip) AND t.id = n.task_id AND t.run_at = n.task_run_at
           AND t.run_at = ANY (v_skip_at) AND t.status = 'WAITING'
        RETURNING t.id
      ),
      recorded AS (
        UPDATE workflow_nodes n SET state = 'SKIPPED'
          FROM skipped s WHERE n.task_id = ANY (v_skip) AND n.task_id = s.id
        RETURNING n.task_id
      )
      SELECT coalesce(array_agg(r.task_id), '{}') INTO v_frontier FROM recorded r;
    END IF;

    RETURN QUERY SELECT 'skipped'::text, s.id, v_tenant, NULL::float8, NULL::text
                   FROM unnest(v_frontier) AS s (id);
    v_terminal := v_terminal + cardinality(v_frontier);
    v_state := 'SKIPPED';
  END LOOP;

  SELECT f.status, f.finished INTO v_final
    FROM cf_finish_nodes(v_workflow, v_terminal, (v_status = 'DEAD')::integer, p_now) f;
  IF v_final.finished THEN
    RETURN QUERY SELECT 'finished'::text, v_workflow, v_tenant, NULL::float8, v_final.status;
  END IF;
END
$$;
GRANT EXECUTE ON FUNCTION cf_release_dependents(uuid, timestamptz, timestamptz) TO chronofence_api;

-- cf_cancel_workflow(p_tenant_id uuid, p_workflow_id uuid, p_now timestamptz, p_api_key_id uuid)
--   RETURNS TABLE (outcome text, cancelled_task_ids uuid[])
--   outcome: 'not_found' | 'finished' (already ended: nothing to cancel) |
--   'cancelled' (this call or an earlier one cancelled it; RUNNING nodes
--   finish on their own, then the workflow gets its finished_at).
--   Cancels the pending nodes, marks the workflow CANCELLED, writes the audit row.
CREATE FUNCTION cf_cancel_workflow(p_tenant_id uuid, p_workflow_id uuid, p_now timestamptz,
                                   p_api_key_id uuid)
  RETURNS TABLE (outcome text, cancelled_task_ids uuid[]) LANGUAGE plpgsql AS $$
DECLARE
  v_wf record;
  v_ids uuid[];
BEGIN
  SELECT w.status, w.finished_at INTO v_wf
    FROM workflows w WHERE w.id = p_workflow_id AND w.tenant_id = p_tenant_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text, '{}'::uuid[];
    RETURN;
  END IF;
  IF v_wf.finished_at IS NOT NULL THEN
    RETURN QUERY SELECT 'finished'::text, '{}'::uuid[];
    RETURN;
  END IF;
  UPDATE workflows w SET status = 'CANCELLED' WHERE w.id = p_workflow_id;
  SELECT coalesce(array_agg(c.task_id), '{}') INTO v_ids
    FROM cf_cancel_pending_nodes(p_workflow_id, p_now) c;
  PERFORM cf_finish_nodes(p_workflow_id, cardinality(v_ids), 0, p_now);
  INSERT INTO audit_log (tenant_id, api_key_id, action, task_ids, details, at)
  VALUES (p_tenant_id, p_api_key_id, 'workflow.cancel', v_ids,
          jsonb_build_object('workflow_id', p_workflow_id), p_now);
  RETURN QUERY SELECT 'cancelled'::text, v_ids;
END
$$;
GRANT EXECUTE ON FUNCTION cf_cancel_workflow(uuid, uuid, timestamptz, uuid) TO chronofence_api;
