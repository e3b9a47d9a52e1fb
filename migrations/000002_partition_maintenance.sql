-- 000002: partition maintenance for tasks (one partition per UTC day of run_at).
--
-- cf_ensure_task_partitions(p_from date, p_to date) RETURNS integer
--   Creates tasks_pYYYYMMDD for every day in [p_from, p_to] that lacks one;
--   returns how many it created. Idempotent; serialised by an advisory lock
--   so two maintainers cannot race on CREATE.
-- cf_drop_task_partitions(p_before date) RETURNS TABLE(partition text, dropped boolean)
--   Drops partitions whose whole day is before p_before, and the idempotency
--   keys of their tasks. A partition that still holds a non-terminal task is
--   kept (reported with dropped = false): retention never loses pending work.
-- Callers pass dates computed from their own clock (the injected Clock), so
-- tests can drive maintenance without waiting for days to pass.

CREATE FUNCTION cf_ensure_task_partitions(p_from date, p_to date) RETURNS integer
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
        'CREATE TABLE %I PARTITION OF tasks FOR VALUES FROM (%L) TO (%L)',
        v_name,
        (v_day::timestamp AT TIME ZONE 'UTC'),
        ((v_day + 1)::timestamp AT TIME ZONE 'UTC'));
      v_created := v_created + 1;
    END IF;
  END LOOP;
  RETURN v_created;
END
$$;

CREATE FUNCTION cf_drop_task_partitions(p_before date)
  RETURNS TABLE (partition text, dropped boolean)
  LANGUAGE plpgsql AS $$
DECLARE
  v_name text;
  v_day date;
  v_pending boolean;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('chronofence.task_partitions'));
  FOR v_name IN
    SELECT c.relname FROM pg_inherits i
      JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'tasks'::regclass AND c.relname ~ '^tasks_p[0-9]{8}$'
     ORDER BY c.relname
  LOOP
    v_day := to_date(substr(v_name, 8), 'YYYYMMDD');
    CONTINUE WHEN v_day >= p_before;
    EXECUTE format(
      'SELECT EXISTS (SELECT 1 FROM %I WHERE status NOT IN (''COMPLETED'', ''DEAD'', ''CANCELLED'', ''SKIPPED''))',
      v_name) INTO v_pending;
    IF NOT v_pending THEN
      DELETE FROM idempotency_keys
       WHERE task_run_at >= (v_day::timestamp AT TIME ZONE 'UTC')
         AND task_run_at < ((v_day + 1)::timestamp AT TIME ZONE 'UTC');
      EXECUTE format('DROP TABLE %I', v_name);
    END IF;
    partition := v_name;
    dropped := NOT v_pending;
    RETURN NEXT;
  END LOOP;
END
$$;
