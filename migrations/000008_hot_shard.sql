-- 000008: the hot-tier shard of a task, stored, so that a pre-loader sweeps
-- only the shards it owns and Postgres does the filtering.
--
-- tasks.hot_shard: shardOf(tenant_id, id) of node/src/domain/shard.ts —
--   FNV-1a (32-bit) of "<tenant_id>:<id>" modulo 16, the Redis shard every role
--   uses. Writers pass it (cf_insert_tasks below: Node computes it for the ZADD
--   anyway); a row inserted without it gets it from a trigger, so no writer can
--   leave a task out of every shard's sweep. It never changes: tenant and id
--   do not.
-- cf_hot_shard(p_tenant_id uuid, p_task_id uuid) RETURNS smallint
--   The same hash in SQL, for the trigger and the backfill below: about 15 µs
--   a row, which is why the hot path passes the value instead. Must agree with
--   shardOf (an integration test compares them).
-- tasks_scheduled_shard_run_at_idx (hot_shard, run_at, id) WHERE SCHEDULED:
--   one range scan per shard for the pre-loader's and the reconciler's
--   sweeps, in (run_at, id) keyset order. It replaces
--   tasks_scheduled_run_at_idx (run_at), whose only reader was that sweep:
--   one index on the SCHEDULED rows, not two, on the ingest path.
-- cf_insert_tasks: as in 000003, and each row of p_rows carries hot_shard.

CREATE FUNCTION cf_hot_shard(p_tenant_id uuid, p_task_id uuid) RETURNS smallint
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  -- uuid::text is lowercase ASCII, so its bytes are the UTF-16 code units shardOf hashes.
  v_bytes bytea := convert_to(p_tenant_id::text || ':' || p_task_id::text, 'UTF8');
  v_hash bigint := 2166136261;
BEGIN
  FOR i IN 0 .. length(v_bytes) - 1 LOOP
    v_hash := ((v_hash # get_byte(v_bytes, i)) * 16777619) & 4294967295;
  END LOOP;
  RETURN (v_hash % 16)::smallint;
END
$$;

CREATE FUNCTION cf_fill_hot_shard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.hot_shard := cf_hot_shard(NEW.tenant_id, NEW.id);
  RETURN NEW;
END
$$;

ALTER TABLE tasks ADD COLUMN hot_shard smallint;
UPDATE tasks SET hot_shard = cf_hot_shard(tenant_id, id);
ALTER TABLE tasks ALTER COLUMN hot_shard SET NOT NULL;
ALTER TABLE tasks ADD CONSTRAINT tasks_hot_shard_check CHECK (hot_shard >= 0 AND hot_shard < 16);

-- The WHEN clause keeps the trigger free for writers that pass hot_shard: no function call.
CREATE TRIGGER tasks_fill_hot_shard BEFORE INSERT ON tasks
  FOR EACH ROW WHEN (NEW.hot_shard IS NULL) EXECUTE FUNCTION cf_fill_hot_shard();

DROP INDEX tasks_scheduled_run_at_idx;
CREATE INDEX tasks_scheduled_shard_run_at_idx ON tasks (hot_shard, run_at, id)
  WHERE status = 'SCHEDULED';

CREATE OR REPLACE FUNCTION cf_insert_tasks(p_rows jsonb, p_tenants uuid[], p_now timestamptz)
  RETURNS TABLE (ord integer, task_id uuid, request_hash bytea)
  LANGUAGE plpgsql AS $$
DECLARE
  v_tenant uuid;
  v_unclaimed bigint;
BEGIN
  FOREACH v_tenant IN ARRAY p_tenants LOOP
    PERFORM set_config('app.tenant_id', v_tenant::text, true);

    WITH input AS (
      SELECT r.*, timestamptz 'epoch' + r.run_at_ms * interval '1 millisecond' AS run_at,
             timestamptz 'epoch' + r.created_at_ms * interval '1 millisecond' AS created_at
        FROM jsonb_to_recordset(p_rows) AS r (
          ord integer, id uuid, tenant_id uuid, hot_shard smallint, type text, payload jsonb,
          priority text, run_at_ms bigint, max_attempts integer, timeout_ms integer,
          backoff_strategy text, backoff_base_ms integer, backoff_max_ms integer,
          created_at_ms bigint, idempotency_key text, request_hash text, api_key_id uuid,
          request_id text)
       WHERE r.tenant_id = v_tenant
    ),
    claimed AS (
      INSERT INTO idempotency_keys AS k
             (tenant_id, idempotency_key, request_hash, task_id, task_run_at, created_at)
      SELECT i.tenant_id, i.idempotency_key, decode(i.request_hash, 'hex'), i.id, i.run_at, p_now
        FROM input i WHERE i.idempotency_key IS NOT NULL
      ON CONFLICT DO NOTHING
      RETURNING k.task_id
    ),
    inserted AS (
      INSERT INTO tasks (id, tenant_id, hot_shard, type, payload, priority, status, run_at,
                         max_attempts, timeout_ms, backoff_strategy, backoff_base_ms,
                         backoff_max_ms, idempotency_key, created_at, updated_at)
      -- JSON null arrives as SQL NULL from jsonb_to_recordset: store it as jsonb null.
      SELECT i.id, i.tenant_id, i.hot_shard, i.type, coalesce(i.payload, 'null'::jsonb), i.priority,
             'SCHEDULED', i.run_at, i.max_attempts, i.timeout_ms, i.backoff_strategy,
             i.backoff_base_ms, i.backoff_max_ms, i.idempotency_key, i.created_at, i.created_at
        FROM input i
       WHERE i.idempotency_key IS NULL OR i.id IN (SELECT c.task_id FROM claimed c)
      RETURNING 1
    ),
    -- The same predicate as `inserted` (a failed insert fails the statement),
    -- rather than a join: the planner cannot estimate these CTEs and would
    -- nest-loop a join over them, quadratic in the group size.
    audited AS (
      INSERT INTO audit_log (tenant_id, api_key_id, action, task_ids, details, at)
      SELECT v_tenant, i.api_key_id, 'task.create', array_agg(i.id ORDER BY i.ord),
             jsonb_build_object('request_ids', array_agg(DISTINCT i.request_id)), p_now
        FROM input i
       WHERE i.idempotency_key IS NULL OR i.id IN (SELECT c.task_id FROM claimed c)
       GROUP BY i.api_key_id
    )
    SELECT (SELECT count(*) FROM input i WHERE i.idempotency_key IS NOT NULL)
         - (SELECT count(*) FROM claimed)
      INTO v_unclaimed;

    -- A new statement takes a new snapshot: it sees keys claimed above and
    -- keys that a concurrent transaction committed while we waited on them.
    IF v_unclaimed > 0 THEN
      RETURN QUERY
        SELECT r.ord, k.task_id, k.request_hash
          FROM jsonb_to_recordset(p_rows) AS r (ord integer, id uuid, tenant_id uuid, idempotency_key text)
          JOIN idempotency_keys k
            ON k.tenant_id = v_tenant AND k.idempotency_key = r.idempotency_key
         WHERE r.tenant_id = v_tenant AND k.task_id <> r.id;
    END IF;
  END LOOP;
END
$$;
