-- 000001: the cold tier's core — tenants, API keys, tasks (partitioned by day
-- of run_at), idempotency keys, leases, the fencing-token sequence, audit log,
-- the API role and row-level security.
--
-- Applied by node/src/adapters/pg/migrate.ts in one transaction, as the owner
-- (the role in DATABASE_URL when running `chronofence migrate`).

-- The API connects (or SET ROLEs) as chronofence_api: not the owner, no
-- BYPASSRLS, so the tenant policies below hold even if the API has a bug.
-- Roles are cluster-wide: another database may have created it already,
-- possibly at this very moment.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'chronofence_api') THEN
    CREATE ROLE chronofence_api NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
  END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
  NULL;
END
$$;

CREATE TABLE tenants (
  id uuid PRIMARY KEY,
  name text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 200),
  rate_per_s double precision NOT NULL CHECK (rate_per_s >= 0),
  burst integer NOT NULL CHECK (burst >= 1),
  max_payload_bytes integer NOT NULL CHECK (max_payload_bytes >= 1),
  grace_ms integer NOT NULL CHECK (grace_ms >= 0),
  created_at timestamptz NOT NULL
);

-- Only SHA-256 of a key is stored; the plaintext is shown once at creation.
CREATE TABLE api_keys (
  id uuid PRIMARY KEY,
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  key_hash bytea NOT NULL UNIQUE CHECK (length(key_hash) = 32),
  created_at timestamptz NOT NULL,
  revoked_at timestamptz
);
CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id);

CREATE TABLE tasks (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  type text NOT NULL,
  payload jsonb NOT NULL,
  priority text NOT NULL CHECK (priority IN ('critical', 'standard', 'bulk')),
  status text NOT NULL CHECK (status IN ('WAITING', 'SCHEDULED', 'ARMED', 'RUNNING', 'COMPLETED',
                                         'FAILED', 'DEAD', 'CANCELLED', 'SKIPPED')),
  run_at timestamptz NOT NULL,
  attempt integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL CHECK (max_attempts >= 1),
  -- Execution fencing token of the current attempt (from fencing_token_seq).
  fencing_token bigint,
  lease_owner text,
  lease_expires_at timestamptz,
  timeout_ms integer NOT NULL CHECK (timeout_ms >= 1),
  backoff_strategy text NOT NULL CHECK (backoff_strategy IN ('exponential', 'fixed')),
  backoff_base_ms integer NOT NULL,
  backoff_max_ms integer NOT NULL,
  idempotency_key text,
  result jsonb,
  last_error jsonb,
  workflow_id uuid,
  workflow_node text,
  schedule_id uuid,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  armed_at timestamptz,
  dispatched_at timestamptz,
  started_at timestamptz,
  completed_at timestamptz,
  failed_at timestamptz,
  dead_at timestamptz,
  cancelled_at timestamptz,
  skipped_at timestamptz,
  -- A unique constraint on a partitioned table must include the partition key.
  PRIMARY KEY (id, run_at)
) PARTITION BY RANGE (run_at);

-- The API's reads: one tenant, keyset-paginated by id (UUIDv7 ≈ creation order).
CREATE INDEX tasks_tenant_id_idx ON tasks (tenant_id, id);
-- The pre-loader's sweep: SCHEDULED tasks due inside the hot window.
CREATE INDEX tasks_scheduled_run_at_idx ON tasks (run_at) WHERE status = 'SCHEDULED';

-- Idempotency keys live outside the partitioned table so that their
-- uniqueness does not depend on run_at.
CREATE TABLE idempotency_keys (
  tenant_id uuid NOT NULL,
  idempotency_key text NOT NULL,
  request_hash bytea NOT NULL,
  task_id uuid NOT NULL,
  task_run_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, idempotency_key)
);
CREATE INDEX idempotency_keys_task_run_at_idx ON idempotency_keys (task_run_at);

-- Shard and leader authority: every acquisition increments epoch, the
-- fencing token of that authority.
CREATE TABLE leases (
  name text PRIMARY KEY,
  owner text NOT NULL,
  epoch bigint NOT NULL,
  expires_at timestamptz NOT NULL
);

-- Execution fencing tokens: every new attempt takes a larger one.
CREATE SEQUENCE fencing_token_seq AS bigint;

-- One row per mutating request, written in the mutation's own transaction.
CREATE TABLE audit_log (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id uuid NOT NULL,
  api_key_id uuid,
  action text NOT NULL,
  request_id text,
  task_ids uuid[] NOT NULL DEFAULT '{}',
  details jsonb,
  at timestamptz NOT NULL
);
CREATE INDEX audit_log_tenant_at_idx ON audit_log (tenant_id, at);

-- Row-level security: defence in depth for tenant isolation. The API sets
-- app.tenant_id per transaction (set_config(..., true)); unset means no rows.
CREATE FUNCTION cf_current_tenant() RETURNS uuid
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT NULLIF(current_setting('app.tenant_id', true), '')::uuid $$;

ALTER TABLE tasks ENABLE ROW LEVEL SECURITY;
ALTER TABLE idempotency_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY tasks_tenant ON tasks
  USING (tenant_id = cf_current_tenant()) WITH CHECK (tenant_id = cf_current_tenant());
CREATE POLICY idempotency_keys_tenant ON idempotency_keys
  USING (tenant_id = cf_current_tenant()) WITH CHECK (tenant_id = cf_current_tenant());
CREATE POLICY audit_log_tenant ON audit_log
  USING (tenant_id = cf_current_tenant()) WITH CHECK (tenant_id = cf_current_tenant());

GRANT USAGE ON SCHEMA public TO chronofence_api;
GRANT SELECT, INSERT, UPDATE ON tasks TO chronofence_api;
GRANT SELECT, INSERT ON idempotency_keys, audit_log TO chronofence_api;
GRANT USAGE ON SEQUENCE fencing_token_seq TO chronofence_api;
