/**
 * Starts a node's report (app/dashboard/node-reporter.ts) for a group of
 * roles: its own one-connection pool on the login role (reports name every
 * tenant, which row-level security would refuse; and a report must not wait
 * behind the role's own work), written at once and every
 * CF_NODE_REPORT_INTERVAL_MS. `stop` removes the node's row.
 */
import { hostname } from "node:os";
import { PgClusterStore } from "../adapters/pg/cluster-store.js";
import { NodeReporter } from "../app/dashboard/node-reporter.js";
import type { TenantActivity } from "../app/dashboard/tenant-activity.js";
import { Loop } from "../app/shared/loop.js";
import type { Config } from "../config/config.js";
import type { Clock } from "../ports/clock.js";
import type { NodeFamily } from "../ports/cluster-store.js";
import {
  loginPgPool,
  type RoleErrorHandler,
  type RoleInfrastructure,
  rolePgPool,
} from "./role-connections.js";

export interface NodeReport {
  stop(): Promise<void>;
}

export function startNodeReport(
  infra: RoleInfrastructure,
  config: Config,
  clock: Clock,
  node: { nodeId: string; family: NodeFamily; roles: string[] },
  describe: () => Record<string, unknown>,
  activity: TenantActivity | null,
  onError: RoleErrorHandler,
): NodeReport {
  const applicationName = "chronofence-node-report";
  // The background roles report as their least-privilege role; the API's report writes every
  // tenant's counts at once, which row-level security would refuse its role: its login role,
  // as its partition maintenance does.
  const pool =
    node.family === "api"
      ? loginPgPool(infra, config, { maxConnections: 1, applicationName }, onError)
      : rolePgPool(
          infra,
          config,
          { maxConnections: 1, applicationName, role: node.family },
          onError,
        );
  const reporter = new NodeReporter(
    new PgClusterStore(pool),
    clock,
    { ...node, host: hostname().slice(0, 200), pid: process.pid, startedAtMs: clock.nowMs() },
    describe,
    activity,
  );
  const loop = new Loop(
    () => reporter.report().then(() => false),
    config.nodeReportIntervalMs,
    (error) => onError(error, "node report"),
  ).start();
  return {
    async stop() {
      await loop.stop();
      await reporter.remove().catch((error: unknown) => onError(error, "node report removal"));
      await pool.end().catch(() => undefined);
    },
  };
}
