-- 000020: the arm and the start become HOT updates (heap-only tuples: no
-- new index entries, the old version pruned within its page).
--
-- Postgres can update a row in place only if no indexed column changes, and
-- a column in a partial index's predicate counts as indexed. Every task
-- update changes `status`, which sat in the predicates of the SCHEDULED,
-- ARMED and RUNNING indexes and in the key of tasks_workflow_idx; the arm
-- also changed the indexed armed_at and the start lease_expires_at. So each
-- of the arm, the start and the completion wrote a new entry into every
-- index of the partition (about ten index tuples per task, bench/RESULTS.md).
--
-- Now no index names a column that the arm or the start changes:
-- tasks.unfinished (generated: not in a terminal state) replaces the three
-- status predicates with one that stays true from insert to completion, and
-- tasks_unfinished_shard_run_at_idx serves the pre-loader's sweep (it did
-- already), the reconciler's re-arm and the lease reaper (which read ARMED
-- and RUNNING rows by armed_at and lease_expires_at before). Those two now
-- read the unfinished tasks already due, per shard, and test the state on
-- the row: what is due and unfinished is what is in flight, plus a backlog
-- when the system is behind. The completion still writes index entries (its
-- row leaves the unfinished index), two instead of three.
--
-- A HOT update needs room on the row's page beside the version it replaces:
-- a claim round may arm every task of a page in one statement. Partitions
-- are filled to half (fillfactor 50); the old versions are pruned in place,
-- so a partition of finished tasks is about as large as with the non-HOT
-- updates, which left their dead versions behind on other pages (a partition
-- of tasks due far ahead is twice as large). In the worst case, a batch of
-- small tasks inserted, armed and started together, 90 % of the arms and 83 %
-- of the starts fit (node/test/integration/hot-updates.test.ts; all of them
-- at fillfactor 35); the rest are ordinary updates.
--
-- ADD COLUMN … STORED rewrites every partition once (a table lock for the
-- duration: on a large installation, run it in a quiet hour).

ALTER TABLE tasks ADD COLUMN unfinished boolean NOT NULL
  GENERATED ALWAYS AS (status NOT IN ('COMPLETED', 'DEAD', 'CANCELLED', 'SKIPPED')) STORED;

DROP INDEX tasks_scheduled_shard_run_at_idx;
DROP INDEX tasks_armed_at_idx;
DROP INDEX tasks_running_lease_idx;
DROP INDEX tasks_workflow_idx;
CREATE INDEX tasks_unfinished_shard_run_at_idx ON tasks (hot_shard, run_at, id) WHERE unfinished;
-- Cancelling a workflow's pending tasks: a workflow has few tasks, the state is tested on the row.
CREATE INDEX tasks_workflow_idx ON tasks (workflow_id) WHERE workflow_id IS NOT NULL;

DO $$
DECLARE
  v_partition regclass;
BEGIN
  FOR v_partition IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'tasks'::regclass LOOP
    EXECUTE format('ALTER TABLE %s SET (fillfactor = 50)', v_partition);
  END LOOP;
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
      v_created := v_created + 1;
    END IF;
  END LOOP;
  RETURN v_created;
END
$$;

-- Retention asks whether a partition still holds a pending task: one probe of
-- the unfinished index instead of a scan of the partition.
CREATE OR REPLACE FUNCTION cf_drop_task_partitions(p_before date)
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
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE unfinished)', v_name) INTO v_pending;
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
