-- 000023: the dispatcher's arm names the claims' day partition too
-- (node/src/adapters/pg/day-partition.ts), as the worker's start and
-- completion do since 000022: a prepared statement with a generic plan,
-- planned once per connection. Through `tasks` Postgres planned each claim
-- round again, pruning ~400 partitions: 6.1 µs of planning per task at
-- 5,000 tasks/s, about 1.3 ms per arm under load (bench/RESULTS.md,
-- session 26).
--
-- chronofence_dispatch gets on every task partition what the arm needs: to
-- read a row and to write the columns an arm sets. Its policy on `tasks`
-- already lets it see every tenant's rows (tasks_background, 000011);
-- row-level security does not apply to a partition named directly, and the
-- API's role still gets nothing on the partitions.
--
-- cf_grant_task_partition (000022), which cf_ensure_task_partitions calls
-- for each partition it creates, grants to both roles now; the partitions
-- that exist are granted here.

CREATE OR REPLACE FUNCTION cf_grant_task_partition(p_name text) RETURNS void
  LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format(
    'GRANT SELECT, UPDATE (status, attempt, lease_owner, lease_expires_at, dispatched_at,'
    ' started_at, completed_at, result, updated_at) ON %I TO chronofence_worker',
    p_name);
  EXECUTE format(
    'GRANT SELECT, UPDATE (status, fencing_token, armed_at, updated_at, dispatch_shard,'
    ' dispatch_epoch) ON %I TO chronofence_dispatch',
    p_name);
END
$$;

SELECT cf_grant_task_partition(c.relname)
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'tasks'::regclass AND c.relname ~ '^tasks_p[0-9]{8}$';
