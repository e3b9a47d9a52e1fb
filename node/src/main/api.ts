/**
 * Composition root of the API role: builds the adapters from the config and
 * wires them into the use cases and the HTTP server.
 */

import { apiRoutes } from "../adapters/http/routes.js";
import { scheduleRoutes } from "../adapters/http/schedule-routes.js";
import { HttpServer } from "../adapters/http/server.js";
import type { Logger } from "../adapters/logging/logger.js";
import { ApiMetrics } from "../adapters/metrics/metrics.js";
import { PgExecutionStore } from "../adapters/pg/execution-store.js";
import { maintainTaskPartitions } from "../adapters/pg/partitions.js";
import { createPgPool, type PgPool } from "../adapters/pg/pool.js";
import { PgScheduleStore } from "../adapters/pg/schedule-store.js";
import { PgTaskStore } from "../adapters/pg/task-store.js";
import { PgTenantDirectory } from "../adapters/pg/tenant-directory.js";
import { PgWorkflowStore } from "../adapters/pg/workflow-store.js";
import { RedisDispatchHotTier } from "../adapters/redis/dispatch-hot-tier.js";
import { createRedis, RedisHotTier } from "../adapters/redis/hot-tier.js";
import { GroupCommitter } from "../app/ingest/group-commit.js";
import { afterCommit, IngestService } from "../app/ingest/ingest.js";
import { TaskQueries } from "../app/ingest/task-queries.js";
import { ScheduleService } from "../app/schedules/schedules.js";
import { Authenticator } from "../app/shared/authenticator.js";
import { RateLimiter } from "../app/shared/rate-limiter.js";
import { WorkflowService } from "../app/workflows/workflows.js";
import { type Config, horizonMsOf } from "../config/config.js";
import type { CancelNotifier } from "../ports/cancel-notifier.js";
import type { Clock } from "../ports/clock.js";
import type { TaskStore } from "../ports/task-store.js";
import { uuidv7From } from "./ids.js";

export interface RunningApi {
  port: number;
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
): Promise<RunningApi> {
  const onPgError = (error: Error) => logger.warn({ err: error }, "postgres connection error");
  const pool = createPgPool({
    connectionString: config.databaseUrl,
    maxConnections: config.pgPoolSize,
    statementTimeoutMs: config.pgStatementTimeoutMs,
    connectTimeoutMs: config.pgConnectTimeoutMs,
    role: config.databaseRole === "" ? null : config.databaseRole,
    applicationName: "chronofence-api",
    onError: onPgError,
  });
  // Maintenance is DDL: it runs as the login role, on a connection of its own.
  const adminPool = createPgPool({
    connectionString: config.databaseUrl,
    maxConnections: 1,
    statementTimeoutMs: 120_000,
    connectTimeoutMs: config.pgConnectTimeoutMs,
    role: null,
    applicationName: "chronofence-maintenance",
    onError: onPgError,
  });
  const redis = createRedis({
    url: config.redisUrl,
    keyPrefix: config.redisKeyPrefix,
    commandTimeoutMs: config.redisCommandTimeoutMs,
    connectTimeoutMs: config.pgConnectTimeoutMs,
    onError: (error) => logger.warn({ err: error }, "redis error"),
  });
  const hotTier = new RedisHotTier(redis, config.redisKeyPrefix);
  await hotTier
    .connect()
    .catch((error: unknown) => logger.warn({ err: error }, "redis not reachable yet"));

  const newId = uuidv7From(clock);
  const metrics = new ApiMetrics({ defaultMetrics: true });
  const pgStore = new PgTaskStore(pool);
  const store = seams.wrapTaskStore ? seams.wrapTaskStore(pgStore) : pgStore;
  let ingest: IngestService | undefined;
  const committer = new GroupCommitter(
    store,
    clock,
    {
      maxBatchRows: config.groupCommitMaxRows,
      maxInFlight: config.groupCommitMaxInFlight,
      maxQueuedRows: config.ingestMaxQueuedRows,
    },
    afterCommit(
      () => ingest!,
      hotTier,
      metrics,
      (error) => logger.warn({ err: error }, "hot tier add failed; the pre-loader will repair it"),
    ),
  );
  const limiter = new RateLimiter(clock);
  const timing = { horizonMs: horizonMsOf(config), hotWindowMs: config.hotWindowMs };
  ingest = new IngestService(committer, store, hotTier, limiter, clock, newId, timing);
  const workflows = new WorkflowService(
    new PgWorkflowStore(pool),
    hotTier,
    limiter,
    clock,
    newId,
    timing,
    (error) => logger.warn({ err: error }, "hot tier add failed; the pre-loader will repair it"),
  );
  const authenticator = new Authenticator(new PgTenantDirectory(pool, newId), clock, {
    cacheTtlMs: config.authCacheTtlMs,
    negativeCacheTtlMs: Math.min(config.authCacheTtlMs, 1000),
    maxCachedKeys: 100_000,
  });

  const bootId = newId().slice(-12);
  let requestSeq = 0;
  const cancelNotifier = new RedisDispatchHotTier(redis, config.redisKeyPrefix);
  const nextRequestId = () => `${bootId}-${++requestSeq}`;
  const routes = apiRoutes({
    authenticator,
    ingest,
    queries: new TaskQueries(notifyingCancels(store, cancelNotifier), clock),
    // The API's pool runs as chronofence_api: row-level security scopes every execution call.
    executions: new PgExecutionStore(pool, {
      rowLevelSecurity: true,
      random: Math.random,
      newId,
    }),
    hotTier,
    nowMs: () => clock.nowMs(),
    onHotTierError: (error) =>
      logger.warn({ err: error }, "hot tier add failed; the pre-loader will repair it"),
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
  routes.push(
    ...scheduleRoutes({
      authenticator,
      schedules: new ScheduleService(new PgScheduleStore(pool), cancelNotifier, clock, newId),
      maxBodyBytes: config.maxSingleBodyBytes,
      nextRequestId,
    }),
  );
  const server = new HttpServer(routes, {
    host: config.host,
    port: config.port,
    requestTimeoutMs: config.requestTimeoutMs,
    drainTimeoutMs: config.drainTimeoutMs,
    monotonicMs: () => clock.monotonicMs(),
    onRequest: (route, status) => metrics.request(route, status),
    onError: (error, route) => logger.error({ err: error, route }, "request failed"),
  });

  const maintenance = startMaintenance(adminPool, config, clock, logger);
  await maintenance.first;
  const port = await server.listen();
  logger.info({ port }, "api listening");

  return {
    port,
    async stop() {
      await server.close();
      await committer.whenIdle();
      maintenance.stop();
      await Promise.allSettled([pool.end(), adminPool.end(), hotTier.close()]);
      logger.info("api stopped");
    },
  };
}

/**
 * After a cancel commits, tells the shard's dispatcher (through Redis) to drop
 * the task from its wheel. Not awaited, and a failure is harmless: a
 * cancelled task can no longer be armed, and a worker's fenced start refuses
 * one already published.
 */
function notifyingCancels(store: TaskStore, notifier: CancelNotifier): TaskStore {
  return {
    insertMany: (rows, nowMs) => store.insertMany(rows, nowMs),
    get: (tenantId, taskId) => store.get(tenantId, taskId),
    list: (tenantId, filter) => store.list(tenantId, filter),
    async cancel(tenantId, taskId, apiKeyId, nowMs) {
      const outcome = await store.cancel(tenantId, taskId, apiKeyId, nowMs);
      if (outcome.kind === "cancelled") notifier.cancelled(tenantId, taskId).catch(() => undefined);
      return outcome;
    },
  };
}

/** Runs partition maintenance now and then every interval; failures are logged and retried. */
function startMaintenance(pool: PgPool, config: Config, clock: Clock, logger: Logger) {
  const plan = { horizonMs: horizonMsOf(config), retentionDays: config.retentionDays };
  let retry: NodeJS.Timeout | undefined;
  let stopped = false;
  const run = (): Promise<void> =>
    maintainTaskPartitions(pool, plan, clock.nowMs()).then(
      (report) => logger.info(report, "partition maintenance done"),
      (error: unknown) => {
        if (stopped) return;
        // Without partitions ahead, inserts fail: retry soon, not in an hour.
        logger.error({ err: error }, "partition maintenance failed; retrying in 10 s");
        retry = setTimeout(run, 10_000);
        retry.unref();
      },
    );
  const timer = setInterval(run, config.maintenanceIntervalMs);
  timer.unref();
  return {
    first: run(),
    stop: () => {
      stopped = true;
      clearInterval(timer);
      clearTimeout(retry);
    },
  };
}
