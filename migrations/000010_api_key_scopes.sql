-- 000010: API key scopes (node/src/domain/scopes.ts, docs/operations.md "API key scopes").
--
-- api_keys.scopes: what the key may do, a non-empty subset of submit, read,
--   execute, admin. Keys that exist when this runs get every scope but admin
--   (what they could do before); the default is then dropped, so every new
--   key names its scopes.
--
-- cf_authenticate(p_key_hash bytea) now also RETURNS scopes (replaces
--   000009's; a changed result type needs DROP, not REPLACE).

ALTER TABLE api_keys
  ADD COLUMN scopes text[] NOT NULL DEFAULT '{submit,read,execute}'
    CHECK (cardinality(scopes) >= 1 AND scopes <@ '{submit,read,execute,admin}');
ALTER TABLE api_keys ALTER COLUMN scopes DROP DEFAULT;

DROP FUNCTION cf_authenticate(bytea);
CREATE FUNCTION cf_authenticate(p_key_hash bytea)
  RETURNS TABLE (api_key_id uuid, tenant_id uuid, rate_per_s double precision, burst integer,
                 max_payload_bytes integer, grace_ms integer, default_max_attempts integer,
                 default_backoff_base_ms integer, default_backoff_max_ms integer, scopes text[])
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
  AS $$
    SELECT k.id, t.id, t.rate_per_s, t.burst, t.max_payload_bytes, t.grace_ms,
           t.default_max_attempts, t.default_backoff_base_ms, t.default_backoff_max_ms, k.scopes
      FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
     WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL
  $$;
REVOKE ALL ON FUNCTION cf_authenticate(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION cf_authenticate(bytea) TO chronofence_api;
