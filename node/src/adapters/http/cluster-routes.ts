/**
 * The operator's route (docs/dashboard.md, "Cluster"): nodes, shards,
 * leases, Kafka lag, reconciler activity and every tenant's watchdog alerts.
 * Authorization: Bearer <CF_ADMIN_TOKEN>, not a tenant's key; without the
 * token configured it answers 401 to everyone.
 */
import type { ClusterService } from "../../app/dashboard/cluster.js";
import { json, type Route } from "./exchange.js";
import { presentCluster } from "./present-dashboard.js";

export function clusterRoutes(cluster: ClusterService): Route[] {
  return [
    {
      // The cluster as its nodes report it: roles, shard owners and epochs, timers, lag, alerts.
      method: "get",
      pattern: "/v1/cluster",
      name: "GET /v1/cluster",
      async handle(request) {
        return json(200, presentCluster(await cluster.view(request.authorization)));
      },
    },
  ];
}
