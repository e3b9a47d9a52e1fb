-- 000022: the worker's batched start and completion name the day's partition
-- (tasks_pYYYYMMDD) instead of `tasks`, so that each can be a prepared
-- statement with a generic plan: Postgres then plans it once per connection
-- instead of once per batch. Through the parent a plan cost 0.25–0.35 ms
-- (the start and the completion of a batch of one or two tasks at 1,000/s:
-- about 350 µs of planning per task, half of Postgres' time there), and a
-- generic plan of the parent is no way out: Postgres 15 locks all ~400
-- partitions and their indexes for each execution of one (bench/RESULTS.md,
-- session 16).
--
-- A partition is a table of its own for privileges: the grants on `tasks`
-- (000011, 000019) do not reach it. chronofence_worker gets on every task
-- partition exactly what those two statements need: to read a row and to
-- write the columns a start and a completion set. Row-level security does
-- not apply to a partition named directly; the worker's policy on `tasks`
-- lets it see every tenant's rows anyway (tasks_background, 000011), and no
-- other role gets anything on the partitions, so the API's tenant policy
-- cannot be gone around through them.
--
-- cf_ensure_task_partitions grants as it creates; the partitions that exist
-- are granted here.
--
-- Postgres picks the generic plan of a prepared statement (after five custom
-- ones) only if it looks no dearer than the custom plans. It estimates
-- unnest() of an array parameter at 10 rows where a custom plan counts the
-- array's elements, so for the batches of one or two tasks that low rates
-- make it would plan every execution anyway. cf_start_batch and
-- cf_complete_batch unnest a batch's arrays into its rows and say ROWS 1:
-- both plans then expect one row and probe the partition's index once per
-- row, the plan wanted for any batch size, and the generic one wins. They are
-- PL/pgSQL, whose own statement keeps its plan across calls (a SQL function
-- would be inlined, and its estimate with it).

CREATE FUNCTION cf_start_batch(p_tenant_ids uuid[], p_ids uuid[], p_tokens bigint[],
                               p_run_at_ms float8[], p_now_ms float8[], p_dispatched_ms float8[])
  RETURNS TABLE (tenant_id uuid, id uuid, token bigint, run_at_ms float8, now_ms float8,
                 dispatched_ms float8)
  LANGUAGE plpgsql STABLE ROWS 1 AS $$
BEGIN
  RETURN QUERY SELECT * FROM unnest(p_tenant_ids, p_ids, p_tokens, p_run_at_ms, p_now_ms,
                                    p_dispatched_ms);
END
$$;

CREATE FUNCTION cf_complete_batch(p_tenant_ids uuid[], p_ids uuid[], p_tokens bigint[],
                                  p_run_at_ms float8[], p_results text[], p_now_ms float8[])
  RETURNS TABLE (tenant_id uuid, id uuid, token bigint, run_at_ms float8, result text,
                 now_ms float8)
  LANGUAGE plpgsql STABLE ROWS 1 AS $$
BEGIN
  RETURN QUERY SELECT * FROM unnest(p_tenant_ids, p_ids, p_tokens, p_run_at_ms, p_results,
                                    p_now_ms);
END
$$;

CREATE FUNCTION cf_grant_task_partition(p_name text) RETURNS void
  LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format(
    'GRANT SELECT, UPDATE (status, attempt, lease_owner, lease_expires_at, dispatched_at,'
    ' started_at, completed_at, result, updated_at) ON %I TO chronofence_worker',
    p_name);
END
$$;

CREATE OR REPLACE FUNCTION cf_ensure_task_partitions(p_from date, p_to date) RETURNS integer
  LANGUAGE plpgsql AS $$
DECLARE
  v_day date;
  v_name text;
  v_created integer := 0;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('chronofence.task_partitions'));
  FOR v_day IN SELECT generate_series(p_from, p_to, interval '1 day')::date LOOP
    v_name := 'tasks_p' || to_char(v_day, 'YYYYMMDD');
    IF to_regclass(v_name) IS NULL THEN
      EXECUTE format(
        'CREATE TABLE %I PARTITION OF tasks FOR VALUES FROM (%L) TO (%L) WITH (fillfactor = 50)',
        v_name,
        (v_day::timestamp AT TIME ZONE 'UTC'),
        ((v_day + 1)::timestamp AT TIME ZONE 'UTC'));
      PERFORM cf_grant_task_partition(v_name);
      v_created := v_created + 1;
    END IF;
  END LOOP;
  RETURN v_created;
END
$$;

SELECT cf_grant_task_partition(c.relname)
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'tasks'::regclass AND c.relname ~ '^tasks_p[0-9]{8}$';
