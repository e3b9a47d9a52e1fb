-- 000024: the tasks' primary key leads with the tenant, (tenant_id, id,
-- run_at), and takes the place of tasks_tenant_id_idx (tenant_id, id).
--
-- Every task wrote five index entries: three at its insert (the primary key,
-- the tenant index, the unfinished index) and two at its completion, the one
-- update that cannot be HOT (its row leaves the unfinished index, so it gets
-- new entries in the others; migrations/000020). The two keys named the same
-- rows: the primary key served the statements that know a task's run_at,
-- the tenant index the API's reads and the workers' fenced statements. One
-- key serves both now, and a task writes three entries: at 5,000 tasks/s
-- the B-tree leaf inserts fell from 5.0 to 3.0 per task, the WAL by an
-- eighth and the CPU per task by about 2 % (bench/RESULTS.md, session 28).
--
-- Ids stay unique: the server makes them (UUIDv7). Every statement that
-- names a task now names its tenant too, or, where it knows only the task's
-- shard (the arm's claims), reads it through the unfinished index
-- (node/src/adapters/pg/sql/dispatch.ts). Of the functions, only
-- cf_release_dependents looked a task up without its tenant: it reads the
-- tenant from the task's workflow node.
--
-- Building the new key takes each partition's lock for the duration (as
-- 000020's rewrite did: on a large installation, run it in a quiet hour).

ALTER TABLE tasks DROP CONSTRAINT tasks_pkey;
ALTER TABLE tasks ADD CONSTRAINT tasks_pkey PRIMARY KEY (tenant_id, id, run_at);
DROP INDEX tasks_tenant_id_idx;

CREATE OR REPLACE FUNCTION cf_release_dependents(p_task_id uuid, p_run_at timestamptz, p_now timestamptz)
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
  -- The node names the task's tenant, the key's first column (a task outside any workflow has
  -- no node: nothing to do).
  SELECT t.status, t.workflow_id, t.tenant_id INTO v_status, v_workflow, v_tenant
    FROM workflow_nodes n
    JOIN tasks t ON t.tenant_id = n.tenant_id AND t.id = n.task_id AND t.run_at = p_run_at
   WHERE n.task_id = p_task_id;
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
           WHERE n.task_id = ANY (v_release) AND t.tenant_id = n.tenant_id AND t.id = n.task_id
             AND t.run_at = n.task_run_at
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
         WHERE n.task_id = ANY (v_skip) AND t.tenant_id = n.tenant_id AND t.id = n.task_id
           AND t.run_at = n.task_run_at
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
