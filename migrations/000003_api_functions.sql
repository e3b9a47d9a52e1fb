-- 000003: the functions the API calls.
--
-- cf_authenticate(p_key_hash bytea)
--   RETURNS (api_key_id, tenant_id, rate_per_s, burst, max_payload_bytes, grace_ms)
--   One row for an active key whose SHA-256 is p_key_hash, none otherwise.
--   SECURITY DEFINER: the API role cannot read api_keys itself, and the
--   tenant is not known before the key is (so RLS cannot scope this read).
--
-- cf_insert_tasks(p_rows jsonb, p_tenants uuid[], p_now timestamptz)
--   RETURNS (ord, task_id, request_hash) — one row per input row whose
--   idempotency key was already taken (by an earlier request, or by an
--   earlier row of the same call); all other rows are inserted.
--   p_rows: JSON array of {ord, id, tenant_id, type, payload, priority,
--   run_at_ms, max_attempts, timeout_ms, backoff_strategy, backoff_base_ms,
--   backoff_max_ms, created_at_ms, idempotency_key, request_hash (hex), api_key_id, request_id};
--   p_tenants: the distinct tenant_ids of p_rows (the caller knows them; parsing
--   p_rows once more to find them costs more than the whole insert of a row).
--   One call is one group commit: the caller runs it as a single statement,
--   so all rows, their idempotency keys and audit rows commit together. The
--   audit log gets one row per (tenant, API key) per call, listing every task
--   id it created and the requests they came from.
--   jsonb, not json: parsed once, after which extracting each payload is a copy.
--   Runs as the caller (SECURITY INVOKER): it sets app.tenant_id for each
--   tenant in turn, so row-level security checks every row it writes.

CREATE FUNCTION cf_authenticate(p_key_hash bytea)
  RETURNS TABLE (api_key_id uuid, tenant_id uuid, rate_per_s double precision, burst integer,
                 max_payload_bytes integer, grace_ms integer)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
  AS $$
    SELECT k.id, t.id, t.rate_per_s, t.burst, t.max_payload_bytes, t.grace_ms
      FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
     WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL
  $$;
REVOKE ALL ON FUNCTION cf_authenticate(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION cf_authenticate(bytea) TO chronofence_api;

CREATE FUNCTION cf_insert_tasks(p_rows jsonb, p_tenants uuid[], p_now timestamptz)
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
          ord integer, id uuid, tenant_id uuid, type text, payload jsonb, priority text,
          run_at_ms bigint, max_attempts integer, timeout_ms integer, backoff_strategy text,
          backoff_base_ms integer, backoff_max_ms integer, created_at_ms bigint, idempotency_key text,
          request_hash text, api_key_id uuid, request_id text)
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
      INSERT INTO tasks (id, tenant_id, type, payload, priority, status, run_at, max_attempts,
                         timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
                         idempotency_key, created_at, updated_at)
      -- JSON null arrives as SQL NULL from jsonb_to_recordset: store it as jsonb null.
      SELECT i.id, i.tenant_id, i.type, coalesce(i.payload, 'null'::jsonb), i.priority, 'SCHEDULED', i.run_at,
             i.max_attempts, i.timeout_ms, i.backoff_strategy, i.backoff_base_ms,
             i.backoff_max_ms, i.idempotency_key, i.created_at, i.created_at
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
GRANT EXECUTE ON FUNCTION cf_insert_tasks(jsonb, uuid[], timestamptz) TO chronofence_api;
