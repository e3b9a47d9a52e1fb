-- 000018: what the dashboard reads that no table held (docs/dashboard.md).
--
-- cluster_nodes: one row per running group of roles, keyed by its node id
--   and family (a `chronofence run` process has one group per family:
--   dispatch roles, worker, planner, api; with CF_NODE_ID they share the id),
--   written by that group every CF_NODE_REPORT_INTERVAL_MS (one UPSERT, not
--   per task): its roles, host, pid, when it started and was last seen, and
--   `report`, a small JSON of what only it knows (timers in its wheel and per
--   shard, the reconciler's last runs). A node deletes its row when it stops;
--   rows unseen for an hour are deleted by any reporting node. No tenant data:
--   the API role may read it, and does so only for the operator (CF_ADMIN_TOKEN).
--
-- node_tenant_stats: per node and tenant, the activity of the last minutes
--   that node recorded (completions, failures, dead letters, lateness of
--   publish and of start), in 10-second buckets (app/dashboard/tenant-activity.ts),
--   rewritten with the node's report. Summed over nodes, it is the tenant's
--   completed/s, failed/s and lateness percentiles. Row-level security: a
--   tenant reads only its own rows.
--
-- watchdog_alerts: the alert state the watchdog reports through the API
--   (POST /v1/watchdog/alerts) with its tenant's key: one row per alert key
--   (`canary`, `schedule:<id>`), firing or resolved. Row-level security; the
--   operator reads every tenant's through cf_watchdog_alerts_all().
--
-- The API role reads leases (names, owners and epochs: no tenant data) for the
-- operator's cluster page.

CREATE TABLE cluster_nodes (
  node_id text NOT NULL,
  family text NOT NULL CHECK (family IN ('dispatch', 'worker', 'planner', 'api')),
  roles text[] NOT NULL,
  host text NOT NULL,
  pid integer NOT NULL,
  started_at timestamptz NOT NULL,
  seen_at timestamptz NOT NULL,
  report jsonb NOT NULL,
  PRIMARY KEY (node_id, family)
);

CREATE TABLE node_tenant_stats (
  node_id text NOT NULL,
  family text NOT NULL,
  tenant_id uuid NOT NULL,
  seen_at timestamptz NOT NULL,
  -- [{start_ms, completed, failed, dead, publish: {bin: count}, start: {bin: count}}]
  buckets jsonb NOT NULL,
  PRIMARY KEY (tenant_id, node_id, family)
);
CREATE INDEX node_tenant_stats_node_idx ON node_tenant_stats (node_id, family);

CREATE TABLE watchdog_alerts (
  tenant_id uuid NOT NULL,
  key text NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
  kind text NOT NULL CHECK (kind IN ('canary', 'dead_mans_switch')),
  state text NOT NULL CHECK (state IN ('firing', 'resolved')),
  message text NOT NULL,
  details jsonb NOT NULL,
  fired_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, key)
);

ALTER TABLE node_tenant_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE watchdog_alerts ENABLE ROW LEVEL SECURITY;
CREATE POLICY node_tenant_stats_tenant ON node_tenant_stats
  USING (tenant_id = cf_current_tenant()) WITH CHECK (tenant_id = cf_current_tenant());
CREATE POLICY watchdog_alerts_tenant ON watchdog_alerts
  USING (tenant_id = cf_current_tenant()) WITH CHECK (tenant_id = cf_current_tenant());

GRANT SELECT ON cluster_nodes, leases TO chronofence_api;
GRANT SELECT ON node_tenant_stats TO chronofence_api;
GRANT SELECT, INSERT, UPDATE ON watchdog_alerts TO chronofence_api;

-- Every tenant's alerts, for the operator's cluster page (the caller checked CF_ADMIN_TOKEN).
CREATE FUNCTION cf_watchdog_alerts_all()
  RETURNS TABLE (tenant_id uuid, key text, kind text, state text, message text, details jsonb,
                 fired_at timestamptz, updated_at timestamptz)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
  AS $$
    SELECT tenant_id, key, kind, state, message, details, fired_at, updated_at
      FROM watchdog_alerts ORDER BY state, updated_at DESC LIMIT 1000
  $$;
REVOKE ALL ON FUNCTION cf_watchdog_alerts_all() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION cf_watchdog_alerts_all() TO chronofence_api;
