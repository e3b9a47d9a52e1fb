-- 000021: a task partition that holds rows but gives the planner nothing to
-- estimate run_at with is analyzed at once, not when autovacuum gets to it.
--
-- The workers' batched starts and completions bound run_at by whole UTC days
-- so that the planner prunes to the batch's partitions. With no statistics
-- on run_at, Postgres takes such a range to hold 0.5 % of the partition
-- (its default), expects a row or two, reads the day's rows by bitmap and
-- joins each of them with the whole batch: at 5,000 tasks/s the completion
-- cost 125 µs of Postgres time per task instead of about 60, and the start
-- most of its rows' worth in plans like it (bench/RESULTS.md, session 14).
-- A partition is in that state from its first rows until it is analyzed:
-- with autovacuum on, up to a minute or so; with autovacuum off, or on the
-- embedded PGlite (which has no autovacuum), for ever. One ANALYZE is
-- enough for the rest of the partition's life: any histogram of a day's
-- run_at lies within that day's bounds, so the range is then taken as the
-- whole partition, which it is.
--
-- cf_analyze_task_partitions(p_from, p_to): the partitions of those days
-- (inclusive) that have rows but neither a histogram nor common values for
-- run_at; each is analyzed, and its name returned. The API role runs it
-- every few seconds for yesterday to tomorrow (CF_STATISTICS_INTERVAL_MS):
-- the check reads the catalog only, and ANALYZE takes a lock that does not
-- block reads or writes of the partition.

CREATE FUNCTION cf_analyze_task_partitions(p_from date, p_to date) RETURNS SETOF text
  LANGUAGE plpgsql AS $$
DECLARE
  v_day date;
  v_name text;
  v_schema text;
  v_has_rows boolean;
BEGIN
  FOR v_day IN SELECT generate_series(p_from, p_to, interval '1 day')::date LOOP
    v_name := 'tasks_p' || to_char(v_day, 'YYYYMMDD');
    SELECT n.nspname INTO v_schema
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.oid = to_regclass(v_name);
    CONTINUE WHEN v_schema IS NULL;
    -- By schema and name: pg_stats then reads the partition's rows only.
    CONTINUE WHEN EXISTS (
      SELECT 1 FROM pg_stats s
       WHERE s.schemaname = v_schema AND s.tablename = v_name AND s.attname = 'run_at'
         AND (s.histogram_bounds IS NOT NULL OR s.most_common_vals IS NOT NULL));
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.%I)', v_schema, v_name) INTO v_has_rows;
    CONTINUE WHEN NOT v_has_rows;
    EXECUTE format('ANALYZE %I.%I', v_schema, v_name);
    RETURN NEXT v_name;
  END LOOP;
END
$$;

-- Only the login role (its owner, the only one that may analyze) runs it.
REVOKE ALL ON FUNCTION cf_analyze_task_partitions(date, date) FROM PUBLIC;
