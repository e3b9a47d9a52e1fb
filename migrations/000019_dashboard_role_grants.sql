-- What the least-privilege roles (000011) need of what the dashboard added
-- (000017, 000018), which did not exist when 000011 granted column by column:
-- the failure statements append tasks.attempts (dispatcher's reconciler and
-- worker), the worker's start stores dispatched_at, and every background role
-- reports its node and its per-tenant activity (node-report.ts) and prunes
-- stale reports. No tenant's task data is in these two tables beyond counts.

GRANT UPDATE (attempts) ON tasks TO chronofence_dispatch, chronofence_worker;
GRANT UPDATE (dispatched_at) ON tasks TO chronofence_worker;

GRANT SELECT, INSERT, UPDATE, DELETE ON cluster_nodes, node_tenant_stats
  TO chronofence_dispatch, chronofence_worker, chronofence_planner;
CREATE POLICY node_tenant_stats_background ON node_tenant_stats
  TO chronofence_dispatch, chronofence_worker, chronofence_planner USING (true) WITH CHECK (true);
