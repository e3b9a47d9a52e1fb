/**
 * The tenant directory's statements (tables tenants, api_keys, audit_log in
 * migrations/000001_core.sql; the retry defaults since 000009). All but
 * AUTHENTICATE are admin statements for the owner's pool. Their times are
 * written through to_timestamp (sqlTimestamptzViaSeconds: a numeric
 * parameter, see epoch-ms.ts for how it differs from sqlTimestamptz).
 */
import { sqlEpochMs, sqlTimestamptzViaSeconds } from "../epoch-ms.js";

/**
 * authenticate: the principal of an API key, for the API role.
 * $1 key_hash bytea (SHA-256 of the key). Locks: nothing.
 * → 1 row (api_key_id, tenant_id, rate_per_s, burst, max_payload_bytes, grace_ms,
 *   default_max_attempts, default_backoff_base_ms, default_backoff_max_ms) for an
 *   active key, else 0. cf_authenticate (SECURITY DEFINER) is in
 *   migrations/000009_tenant_retry_defaults.sql (replacing 000003's).
 */
export const AUTHENTICATE = "SELECT * FROM cf_authenticate($1)";

/**
 * insert-tenant: $1 id uuid, $2 name, $3 rate_per_s, $4 burst, $5 max_payload_bytes,
 * $6 grace_ms, $7 default_max_attempts, $8 default_backoff_base_ms,
 * $9 default_backoff_max_ms (NULL: no default of its own), $10 now_ms.
 * Locks: the new row only. → no rows; SQLSTATE 23505 when the name is taken.
 */
export const INSERT_TENANT = `
INSERT INTO tenants (id, name, rate_per_s, burst, max_payload_bytes, grace_ms,
                     default_max_attempts, default_backoff_base_ms,
                     default_backoff_max_ms, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, ${sqlTimestamptzViaSeconds("$10")})`;

/** insert-api-key: $1 id uuid, $2 tenant_id uuid, $3 key_hash bytea, $4 now_ms. Locks: the new row only. → no rows. */
export const INSERT_API_KEY = `
INSERT INTO api_keys (id, tenant_id, key_hash, created_at)
VALUES ($1, $2, $3, ${sqlTimestamptzViaSeconds("$4")})`;

/** audit-tenant-create: $1 tenant_id uuid, $2 details jsonb text, $3 now_ms. Locks: the new row only. → no rows. */
export const AUDIT_TENANT_CREATE = `
INSERT INTO audit_log (tenant_id, api_key_id, action, details, at)
VALUES ($1, NULL, 'tenant.create', $2, ${sqlTimestamptzViaSeconds("$3")})`;

/** audit-tenant-update: $1 tenant_id uuid, $2 details jsonb text (from, to), $3 now_ms. Locks: the new row only. → no rows. */
export const AUDIT_TENANT_UPDATE = `
INSERT INTO audit_log (tenant_id, api_key_id, action, details, at)
VALUES ($1, NULL, 'tenant.update', $2, ${sqlTimestamptzViaSeconds("$3")})`;

/** audit-api-key-create: $1 tenant_id uuid, $2 api_key id uuid, $3 now_ms. Locks: the new row only. → no rows. */
export const AUDIT_API_KEY_CREATE = `
INSERT INTO audit_log (tenant_id, api_key_id, action, at)
VALUES ($1, $2, 'api_key.create', ${sqlTimestamptzViaSeconds("$3")})`;

/** Tenants with what TenantRecord needs (created_at_ms, active_keys); the statements below append WHERE / ORDER BY. */
const TENANT_RECORDS = `
SELECT t.*, ${sqlEpochMs("t.created_at")} AS created_at_ms,
       (SELECT count(*) FROM api_keys k WHERE k.tenant_id = t.id AND k.revoked_at IS NULL)::int
         AS active_keys
  FROM tenants t`;

/**
 * lock-tenant-by-name: $1 name.
 * Locks: the tenant's row, FOR UPDATE OF t, to the end of the transaction.
 * → 0 or 1 row of TENANT_RECORDS.
 */
export const LOCK_TENANT_BY_NAME = `${TENANT_RECORDS} WHERE t.name = $1 FOR UPDATE OF t`;

/** list-tenants: no parameters. Locks: nothing. → every tenant (TENANT_RECORDS), by name. */
export const LIST_TENANTS = `${TENANT_RECORDS} ORDER BY t.name`;

/**
 * update-tenant-limits: $1 id uuid, $2 rate_per_s, $3 burst, $4 max_payload_bytes,
 * $5 grace_ms, $6 default_max_attempts, $7 default_backoff_base_ms,
 * $8 default_backoff_max_ms (NULL: none).
 * Locks: the row it updates (the caller already holds it: LOCK_TENANT_BY_NAME). → no rows.
 */
export const UPDATE_TENANT_LIMITS = `
UPDATE tenants SET rate_per_s = $2, burst = $3, max_payload_bytes = $4, grace_ms = $5,
       default_max_attempts = $6, default_backoff_base_ms = $7, default_backoff_max_ms = $8
 WHERE id = $1`;

/**
 * revoke-api-key: revokes an active key and writes its audit row, in one statement.
 * $1 api_key id uuid, $2 now_ms. Locks: the key's row (UPDATE).
 * → 1 row (the audit row's id) if this call revoked it, else 0.
 */
export const REVOKE_API_KEY = `
WITH revoked AS (
  UPDATE api_keys SET revoked_at = ${sqlTimestamptzViaSeconds("$2")}
   WHERE id = $1 AND revoked_at IS NULL RETURNING id, tenant_id)
INSERT INTO audit_log (tenant_id, api_key_id, action, at)
SELECT tenant_id, id, 'api_key.revoke', ${sqlTimestamptzViaSeconds("$2")} FROM revoked
RETURNING id`;
