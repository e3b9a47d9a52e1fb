/**
 * Node reports and the operator's cluster reads (PgClusterStore; contract:
 * ports/cluster-store.ts). Reports are written by each node on the login
 * role; reads run on the API's pool (chronofence_api may read cluster_nodes
 * and leases, which hold no tenant data, and every tenant's alerts only
 * through cf_watchdog_alerts_all).
 */
import { sqlEpochMs, sqlTimestamptz } from "../epoch-ms.js";

/**
 * report-node: one node's report, in one statement (one commit).
 * $1 node_id, $2 roles text[], $3 host, $4 pid, $5 started_ms, $6 now_ms,
 * $7 report jsonb, $8 tenant_ids uuid[], $9 buckets jsonb[] (same order),
 * $10 family. Locks: the node's cluster_nodes row and its node_tenant_stats rows.
 * → no rows. The node's rows of tenants not in $8 are deleted.
 */
export const REPORT_NODE = `
WITH node AS (
  INSERT INTO cluster_nodes (node_id, family, roles, host, pid, started_at, seen_at, report)
  VALUES ($1, $10, $2::text[], $3, $4, ${sqlTimestamptz("$5::float8")}, ${sqlTimestamptz("$6::float8")}, $7::jsonb)
  ON CONFLICT (node_id, family) DO UPDATE
     SET roles = EXCLUDED.roles, host = EXCLUDED.host, pid = EXCLUDED.pid,
         started_at = EXCLUDED.started_at, seen_at = EXCLUDED.seen_at, report = EXCLUDED.report
),
gone AS (
  DELETE FROM node_tenant_stats
   WHERE node_id = $1 AND family = $10 AND tenant_id <> ALL ($8::uuid[])
)
INSERT INTO node_tenant_stats (node_id, family, tenant_id, seen_at, buckets)
SELECT $1, $10, s.tenant_id, ${sqlTimestamptz("$6::float8")}, s.buckets
  FROM unnest($8::uuid[], $9::jsonb[]) AS s (tenant_id, buckets)
ON CONFLICT (tenant_id, node_id, family) DO UPDATE
   SET seen_at = EXCLUDED.seen_at, buckets = EXCLUDED.buckets`;

/**
 * remove-node: $1 node_id, $2 family. Locks: its row. → no rows. Its activity
 * rows stay until they age out (forget-nodes): what it did lately still counts.
 */
export const REMOVE_NODE = "DELETE FROM cluster_nodes WHERE node_id = $1 AND family = $2";

/** forget-nodes: $1 before_ms. Locks: the rows it deletes. → no rows. */
export const FORGET_NODES = `
WITH nodes AS (DELETE FROM cluster_nodes WHERE seen_at < ${sqlTimestamptz("$1::float8")})
DELETE FROM node_tenant_stats WHERE seen_at < ${sqlTimestamptz("$1::float8")}`;

/** nodes: Locks: nothing. → every node's row, by node id. */
export const NODES = `
SELECT node_id, family, roles, host, pid, ${sqlEpochMs("started_at")} AS started_at_ms,
       ${sqlEpochMs("seen_at")} AS seen_at_ms, report
  FROM cluster_nodes ORDER BY node_id, family LIMIT 1000`;

/** leases: Locks: nothing. → every named lease (shards, planner, leader, membership), by name. */
export const LEASES = `
SELECT name, owner, epoch::float8 AS epoch, ${sqlEpochMs("expires_at")} AS expires_at_ms
  FROM leases ORDER BY name LIMIT 10000`;

/** all-alerts: Locks: nothing. → every tenant's watchdog alerts (SECURITY DEFINER function). */
export const ALL_ALERTS = `
SELECT tenant_id, key, kind, state, message, details,
       ${sqlEpochMs("fired_at")} AS fired_at_ms, ${sqlEpochMs("updated_at")} AS updated_at_ms
  FROM cf_watchdog_alerts_all()`;
