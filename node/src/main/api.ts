/**
 * Composition root of the API role: takes its infrastructure (role-connections.ts),
 * builds the adapters on it and wires them into the use cases and the HTTP server.
 */

import type { Route } from "../adapters/http/exchange.js";
import { withApiReference } from "../adapters/http/openapi/reference-routes.js";
import { apiRoutes } from "../adapters/http/routes.js";
import { scheduleRoutes } from "../adapters/http/schedule-routes.js";
import { HttpServer } from "../adapters/http/server.js";
import type { Logger } from "../adapters/logging/logger.js";
import { ApiMetrics } from "../adapters/metrics/metrics.js";
import { PgExecutionStore } from "../adapters/pg/execution-store.js";
import { analyzeHotTaskPartitions, maintainTaskPartitions } from "../adapters/pg/partitions.js";
import { PgScheduleStore } from "../adapters/pg/schedule-store.js";
import { PgTaskStore } from "../adapters/pg/task-store.js";
import { PgTenantDirectory } from "../adapters/pg/tenant-directory.js";
import { PgWorkflowStore } from "../adapters/pg/workflow-store.js";
import { ExecutionService } from "../app/execution/execution-service.js";
import { GroupCommitter } from "../app/ingest/group-commit.js";
import { afterCommit, IngestService } from "../app/ingest/ingest.js";
import { TaskQueries } from "../app/ingest/task-queries.js";
import { ScheduleService } from "../app/schedules/schedules.js";
import { Authenticator } from "../app/shared/authenticator.js";
import { Loop } from "../app/shared/loop.js";
import { RateLimiter } from "../app/shared/rate-limiter.js";
import { WorkflowService } from "../app/workflows/workflows.js";
import { type Config, horizonMsOf } from "../config/config.js";
import type { Clock } from "../ports/clock.js";
import type { TaskStore } from "../ports/task-store.js";
import { apiDashboard } from "./dashboard.js";
import { uuidv7From } from "./ids.js";
import { type RoleInfrastructure, serviceInfrastructure } from "./role-connections.js";

export interface RunningApi {
  port: number;
  /** The route table served (the OpenAPI completeness test walks it). */
  routes: readonly Route[];
  /** Graceful: stop accepting, finish in-flight requests and commits, close connections. */
  stop(): Promise<void>;
}

/** Seams for tests that need to fail on purpose (e.g. crash between commit and answer). */
export interface ApiSeams {
  wrapTaskStore?: (store: TaskStore) => TaskStore;
}

export async function startApi(
  config: Config,
  clock: Clock,
  logger: Logger,
  seams: ApiSeams = {},
  infra: RoleInfrastructure = serviceInfrastructure(config),
): Promise<RunningApi> {
  const onPgError = (error: Error) => logger.warn({ err: error }, "postgres connection error");
  const pool = infra.postgres.pool({
    role: config.databaseRole === "" ? null : config.databaseRole,
    maxConnections: config.pgPoolSize,
    statementTimeoutMs: config.pgStatementTimeoutMs,
    applicationName: "chronofence-api",
    onError: onPgError,
  });
  // Maintenance is DDL: it runs as the login role, on a connection of its own.
  const adminPool = infra.postgres.pool({
    role: null,
    maxConnections: 1,
    statementTimeoutMs: config.maintenanceStatementTimeoutMs,
    applicationName: "chronofence-maintenance",
    onError: onPgError,
  });
  const hot = infra.hotTiers.open((error) => logger.warn({ err: error }, "redis error"));
  const { hotTier } = hot;
  await hot
    .connect()
    .catch((error: unknown) => logger.warn({ err: error }, "redis not reachable yet"));

  const newId = uuidv7From(clock);
  const metrics = new ApiMetrics({ defaultMetrics: true });
  const pgStore = new PgTaskStore(pool);
  const store = seams.wrapTaskStore ? seams.wrapTaskStore(pgStore) : pgStore;
  const onHotTierError = (error: unknown) =>
    logger.warn({ err: error }, "hot tier add failed; the pre-loader will repair it");
  const committer = new GroupCommitter(
    store,
    clock,
    {
      maxBatchRows: config.groupCommitMaxRows,
      maxInFlight: config.groupCommitMaxInFlight,
      maxQueuedRows: config.ingestMaxQueuedRows,
    },
    afterCommit(clock, config.hotWindowMs, hotTier, metrics, onHotTierError),
  );
  const limiter = new RateLimiter(clock);
  const timing = { horizonMs: horizonMsOf(config), hotWindowMs: config.hotWindowMs };
  const ingest = new IngestService(committer, store, hotTier, limiter, clock, newId, timing);
  const workflows = new WorkflowService(
    new PgWorkflowStore(pool),
    hotTier,
    limiter,
    clock,
    newId,
    timing,
    onHotTierError,
  );
  const authenticator = new Authenticator(new PgTenantDirectory(pool, newId), clock, {
    cacheTtlMs: config.authCacheTtlMs,
    negativeCacheTtlMs: Math.min(config.authCacheTtlMs, config.authNegativeCacheTtlMs),
    maxCachedKeys: config.authCacheMaxKeys,
    maxNegativeKeys: config.authNegativeCacheMaxKeys,
    failureBurst: config.authFailureBurst,
    failureRatePerS: config.authFailureRatePerS,
  });

  const bootId = newId().slice(-12);
  let requestSeq = 0;
  const cancelNotifier = hot.dispatch;
  const nextRequestId = () => `${bootId}-${++requestSeq}`;
  const dashboard = apiDashboard(infra, config, clock, logger, pool, `chronofence-api-${bootId}`);
  const routes = apiRoutes({
    authenticator,
    ingest,
    queries: new TaskQueries(store, clock, cancelNotifier),
    executions: new ExecutionService(
      {
        // The API's pool runs as chronofence_api: row-level security scopes every execution call.
        store: dashboard.recording(
          new PgExecutionStore(pool, { rowLevelSecurity: true, random: Math.random, newId }),
        ),
        hotTier,
        onError: onHotTierError,
      },
      { hotWindowMs: config.hotWindowMs },
    ),
    nowMs: () => clock.nowMs(),
    workflows,
    health: [
      { name: "postgres", check: () => pool.query("SELECT 1").then(() => undefined) },
      { name: "redis", check: () => hotTier.ping() },
    ],
    metrics,
    maxSingleBodyBytes: config.maxSingleBodyBytes,
    maxBatchBodyBytes: config.maxBatchBodyBytes,
    nextRequestId,
  });
  const schedules = new ScheduleService(new PgScheduleStore(pool), cancelNotifier, clock, newId);
  routes.push(
    ...scheduleRoutes({
      authenticator,
      schedules,
      maxBodyBytes: config.maxSingleBodyBytes,
      nextRequestId,
    }),
    ...dashboard.routes(authenticator, schedules),
  );
  const served = withApiReference(routes);
  const server = new HttpServer(served, {
    host: config.host,
    port: config.port,
    requestTimeoutMs: config.requestTimeoutMs,
    drainTimeoutMs: config.drainTimeoutMs,
    monotonicMs: () => clock.monotonicMs(),
    onRequest: (route, status) => metrics.request(route, status),
    onError: (error, route) => logger.error({ err: error, route }, "request failed"),
  });

  const plan = { horizonMs: horizonMsOf(config), retentionDays: config.retentionDays };
  const maintenance = new Loop(
    async () => {
      logger.info(
        await maintainTaskPartitions(adminPool, plan, clock.nowMs()),
        "partition maintenance done",
      );
      return false;
    },
    config.maintenanceIntervalMs,
    // Without partitions ahead, inserts fail: retried soon, not in an hour.
    (error) => logger.error({ err: error }, "partition maintenance failed; retrying"),
    { retryAfterErrorMs: config.maintenanceRetryMs },
  );
  await maintenance.startNow();
  const statistics = new Loop(
    async () => {
      const analyzed = await analyzeHotTaskPartitions(adminPool, clock.nowMs());
      if (analyzed.length > 0) logger.info({ partitions: analyzed }, "partitions analyzed");
      return false;
    },
    config.statisticsIntervalMs,
    (error) => logger.warn({ err: error }, "partition statistics failed; retrying"),
  ).start();
  const port = await server.listen();
  logger.info({ port }, "api listening");
  dashboard.listening(port);

  return {
    port,
    routes: served,
    async stop() {
      await server.close();
      await committer.whenIdle();
      await Promise.all([maintenance.stop(), statistics.stop()]);
      await dashboard.stop();
      await Promise.allSettled([pool.end(), adminPool.end(), hot.close()]);
      logger.info("api stopped");
    },
  };
}
