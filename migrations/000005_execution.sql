-- 000005: what workers and the execution protocol need (ports/execution-store.ts).
--
-- dead_letters: one row per time a task became DEAD (retries exhausted, a
--   non-retryable failure, or an expired execution lease with no attempts
--   left), holding the failure context. A replay sets replayed_at; a task that
--   dies again gets a new row, so the history stays.
-- tasks_running_lease_idx: the reconciler's search for RUNNING tasks whose
--   execution lease expired.
-- The API role (chronofence_api) serves the HTTP execution endpoints and
--   replay under row-level security: it may read and write dead_letters of
--   its tenant, and update idempotency_keys.task_run_at (a retry or replay
--   that moves run_at to another day keeps its key with the partition that
--   holds the task, so retention drops them together).

CREATE TABLE dead_letters (
  id uuid PRIMARY KEY,
  tenant_id uuid NOT NULL,
  task_id uuid NOT NULL,
  type text NOT NULL,
  payload jsonb NOT NULL,
  attempt integer NOT NULL,
  max_attempts integer NOT NULL,
  fencing_token bigint NOT NULL,
  -- {message, code?, retryable, details?} as the worker reported it.
  error jsonb NOT NULL,
  -- "exhausted", "non_retryable" or "lease_expired" (the lease expired on the last attempt).
  reason text NOT NULL CHECK (reason IN ('exhausted', 'non_retryable', 'lease_expired')),
  worker_id text,
  run_at timestamptz NOT NULL,
  dead_at timestamptz NOT NULL,
  replayed_at timestamptz
);
CREATE INDEX dead_letters_tenant_task_idx ON dead_letters (tenant_id, task_id);
CREATE INDEX dead_letters_tenant_dead_at_idx ON dead_letters (tenant_id, dead_at);

CREATE INDEX tasks_running_lease_idx ON tasks (lease_expires_at) WHERE status = 'RUNNING';

ALTER TABLE dead_letters ENABLE ROW LEVEL SECURITY;
CREATE POLICY dead_letters_tenant ON dead_letters
  USING (tenant_id = cf_current_tenant()) WITH CHECK (tenant_id = cf_current_tenant());

GRANT SELECT, INSERT, UPDATE ON dead_letters TO chronofence_api;
GRANT UPDATE (task_run_at) ON idempotency_keys TO chronofence_api;
