-- 000009: tenant defaults for the retry policy (domain/retry-defaults.ts).
--
-- tenants.default_max_attempts, default_backoff_base_ms, default_backoff_max_ms:
--   what a task of this tenant gets when its request does not name the field;
--   NULL = no default of the tenant's own (the global default applies). They
--   are resolved at submission into the task row, which stays what workers
--   and the reconciler read. Same ranges as a task's own fields.
--
-- cf_authenticate(p_key_hash bytea) now also RETURNS the three defaults
--   (replaces 000003's; a changed result type needs DROP, not REPLACE).

ALTER TABLE tenants
  ADD COLUMN default_max_attempts integer
    CHECK (default_max_attempts BETWEEN 1 AND 100),
  ADD COLUMN default_backoff_base_ms integer
    CHECK (default_backoff_base_ms BETWEEN 1 AND 86400000),
  ADD COLUMN default_backoff_max_ms integer
    CHECK (default_backoff_max_ms BETWEEN 1 AND 604800000),
  ADD CONSTRAINT tenants_default_backoff_order
    CHECK (default_backoff_base_ms <= default_backoff_max_ms);

DROP FUNCTION cf_authenticate(bytea);
CREATE FUNCTION cf_authenticate(p_key_hash bytea)
  RETURNS TABLE (api_key_id uuid, tenant_id uuid, rate_per_s double precision, burst integer,
                 max_payload_bytes integer, grace_ms integer, default_max_attempts integer,
                 default_backoff_base_ms integer, default_backoff_max_ms integer)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
  AS $$
    SELECT k.id, t.id, t.rate_per_s, t.burst, t.max_payload_bytes, t.grace_ms,
           t.default_max_attempts, t.default_backoff_base_ms, t.default_backoff_max_ms
      FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
     WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL
  $$;
REVOKE ALL ON FUNCTION cf_authenticate(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION cf_authenticate(bytea) TO chronofence_api;
