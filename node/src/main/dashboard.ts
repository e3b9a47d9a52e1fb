/**
 * The dashboard's part of the API role (docs/dashboard.md): its routes (the
 * tenant's stats, task history and search, dead letters, workflows, schedule
 * insight, watchdog alert reports), the operator's cluster view, the static
 * files at /ui, and the API node's own report (what HTTP workers did, through
 * the recording execution store).
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { clusterRoutes } from "../adapters/http/cluster-routes.js";
import { dashboardRoutes } from "../adapters/http/dashboard-routes.js";
import type { Route } from "../adapters/http/exchange.js";
import { uiRoutes } from "../adapters/http/ui-routes.js";
import { KafkaConsumerLag } from "../adapters/kafka/consumer-lag.js";
import type { Logger } from "../adapters/logging/logger.js";
import { PgClusterStore } from "../adapters/pg/cluster-store.js";
import { PgDashboardStore } from "../adapters/pg/dashboard-store.js";
import type { PgPool } from "../adapters/pg/pool.js";
import { ClusterService } from "../app/dashboard/cluster.js";
import { DashboardQueries } from "../app/dashboard/dashboard-queries.js";
import { OperatorToken } from "../app/dashboard/operator-token.js";
import { RecordingExecutionStore } from "../app/dashboard/recording-execution-store.js";
import { ScheduleInsightService } from "../app/dashboard/schedule-insight.js";
import { TaskHistoryService } from "../app/dashboard/task-history.js";
import { TenantActivity } from "../app/dashboard/tenant-activity.js";
import { TenantStatsService } from "../app/dashboard/tenant-stats.js";
import type { ScheduleService } from "../app/schedules/schedules.js";
import type { Authenticator } from "../app/shared/authenticator.js";
import type { Config } from "../config/config.js";
import type { Clock } from "../ports/clock.js";
import type { ExecutionStore } from "../ports/execution-store.js";
import { defaultNodeId } from "./dispatch.js";
import { type NodeReport, startNodeReport } from "./node-report.js";
import type { RoleInfrastructure } from "./role-connections.js";

export interface ApiDashboard {
  /** The API's execution store, recording what HTTP workers do. */
  recording(store: ExecutionStore): ExecutionStore;
  routes(authenticator: Authenticator, schedules: ScheduleService): Route[];
  /** Once listening: the API node's report starts. */
  listening(port: number): void;
  stop(): Promise<void>;
}

export function apiDashboard(
  infra: RoleInfrastructure,
  config: Config,
  clock: Clock,
  logger: Logger,
  pool: PgPool,
  clientId: string,
): ApiDashboard {
  const activity = new TenantActivity();
  const consumerLag = new KafkaConsumerLag(
    config.kafkaBrokers.split(","),
    clientId,
    config.topicPrefix,
  );
  let report: NodeReport | null = null;
  return {
    recording: (store) => new RecordingExecutionStore(store, activity),
    routes(authenticator, schedules) {
      const store = new PgDashboardStore(pool);
      const cluster = new ClusterService(
        new PgClusterStore(pool),
        consumerLag,
        clock,
        new OperatorToken(config.adminToken),
        3 * config.nodeReportIntervalMs,
      );
      return [
        ...dashboardRoutes({
          authenticator,
          stats: new TenantStatsService(store, clock),
          history: new TaskHistoryService(store),
          queries: new DashboardQueries(store, clock),
          insight: new ScheduleInsightService(schedules, clock),
        }),
        ...clusterRoutes(cluster),
        ...uiRoutes(config.uiDir === "" ? defaultUiDir() : config.uiDir),
      ];
    },
    listening(port) {
      report = startNodeReport(
        infra,
        config,
        clock,
        { nodeId: config.nodeId ?? defaultNodeId(), family: "api", roles: ["api"] },
        () => ({ api: { port } }),
        activity,
        (error, what) => logger.warn({ err: error }, `${what} failed`),
      );
    },
    async stop() {
      await report?.stop();
      await consumerLag.close();
    },
  };
}

/** The package's dist/ui: the nearest folder up from this module that has a build. */
function defaultUiDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (let dir = here, up = 0; up < 6; up++, dir = path.dirname(dir)) {
    const candidate = path.join(dir, "dist", "ui");
    if (existsSync(path.join(candidate, "index.html"))) return candidate;
  }
  return path.resolve(here, "../../ui"); // dist/node/src/main → dist/ui: where the build would be
}
