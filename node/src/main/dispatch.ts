/**
 * Composition root of the dispatch-side roles — dispatcher, preloader,
 * reconciler — in any combination: one Postgres pool (as chronofence_dispatch:
 * these roles work across tenants), one hot-tier connection, one publisher, one lease
 * manager, one /metrics listener, all on the infrastructure it is given
 * (role-connections.ts).
 */

import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { startMetricsServer } from "../adapters/http/metrics-server.js";
import type { Logger } from "../adapters/logging/logger.js";
import { PromDispatchMetrics } from "../adapters/metrics/dispatch-metrics.js";
import { PgDispatchStore } from "../adapters/pg/dispatch-store.js";
import { PgExecutionStore } from "../adapters/pg/execution-store.js";
import { PgLeaseStore } from "../adapters/pg/lease-store.js";
import { PgUndeliverableTasks } from "../adapters/pg/undeliverable-tasks.js";
import { ReconcilerActivity } from "../app/dashboard/reconciler-activity.js";
import { RecordingExecutionStore } from "../app/dashboard/recording-execution-store.js";
import { TenantActivity } from "../app/dashboard/tenant-activity.js";
import { Dispatcher } from "../app/dispatch/dispatcher.js";
import { Outbox } from "../app/dispatch/outbox.js";
import { Preloader } from "../app/dispatch/preloader.js";
import { Reconciler } from "../app/dispatch/reconciler.js";
import { familyListener, LeaseManager, loggingLeaseListener } from "../app/shared/leases.js";
import { Loop } from "../app/shared/loop.js";
import type { Config } from "../config/config.js";
import { DISPATCH_FAMILY, PRELOAD_FAMILY } from "../domain/fair-share.js";
import type { Clock } from "../ports/clock.js";
import type { DispatchStore } from "../ports/dispatch-store.js";
import { wheelTimers } from "../timing/wheel-timers.js";
import { uuidv7From } from "./ids.js";
import { startNodeReport } from "./node-report.js";
import { type RoleInfrastructure, rolePgPool, serviceInfrastructure } from "./role-connections.js";

export const DISPATCH_ROLES = ["dispatcher", "preloader", "reconciler"] as const;
export type DispatchRole = (typeof DISPATCH_ROLES)[number];

export interface RunningRoles {
  nodeId: string;
  metricsPort: number;
  /** Graceful: stop claiming, publish or give back what is held, release every lease. */
  stop(): Promise<void>;
}

/** Seams for tests that need a role to misbehave on purpose (e.g. pause with an arm in flight). */
export interface DispatchSeams {
  wrapStore?: (store: DispatchStore) => DispatchStore;
}

export function defaultNodeId(): string {
  const host = hostname()
    .replace(/[^A-Za-z0-9.-]/g, "-")
    .slice(0, 40);
  return `${host}-${process.pid}-${randomBytes(3).toString("hex")}`;
}

export async function startDispatchRoles(
  config: Config,
  clock: Clock,
  logger: Logger,
  roles: ReadonlySet<DispatchRole>,
  seams: DispatchSeams = {},
  infra: RoleInfrastructure = serviceInfrastructure(config),
): Promise<RunningRoles> {
  const nodeId = config.nodeId ?? defaultNodeId();
  const log = logger.child({ node: nodeId });
  const onError = (error: unknown, what: string) => log.warn({ err: error }, `${what} failed`);
  const pool = rolePgPool(
    infra,
    config,
    {
      maxConnections: config.dispatchPgPoolSize,
      applicationName: `chronofence-${[...roles].join("-")}`,
      role: "dispatch",
    },
    onError,
  );
  const hot = infra.hotTiers.open((error) => onError(error, "redis"));
  await hot.connect().catch((error: unknown) => onError(error, "redis connect"));
  const pgStore = new PgDispatchStore(pool);
  const store = seams.wrapStore ? seams.wrapStore(pgStore) : pgStore;
  const hotTier = hot.dispatch;
  const metrics = new PromDispatchMetrics({ defaultMetrics: true });

  const publisher = infra.transport.publisher(`chronofence-${nodeId}`, (error) =>
    onError(error, "kafka"),
  );
  if (roles.has("dispatcher")) await publisher.ensureTopics();
  const undeliverable = new PgUndeliverableTasks(pool, uuidv7From(clock));
  const outbox = new Outbox(publisher, undeliverable, hotTier, clock, metrics, {
    nodeId,
    maxInFlight: config.outboxMaxInFlight,
    maxBatchTasks: config.outboxMaxBatchTasks,
    maxBatchBytes: config.outboxMaxBatchBytes,
    maxMessageBytes: config.kafkaMaxMessageBytes,
    retryDelayMs: config.outboxRetryMs,
    lingerMs: config.directQueues === "" ? config.outboxLingerMs : 0, // direct: never wait
    busyLingerMs: config.outboxBusyLingerMs,
    onError,
  });

  const families = [
    ...(roles.has("dispatcher") ? [DISPATCH_FAMILY] : []),
    ...(roles.has("preloader") ? [PRELOAD_FAMILY] : []),
  ];
  const leases = new LeaseManager(new PgLeaseStore(pool), clock, metrics, {
    nodeId,
    ttlMs: config.leaseTtlMs,
    safetyMarginMs: config.leaseSafetyMarginMs,
    families,
    wantLeader: roles.has("reconciler"),
    onError,
  }).subscribe(loggingLeaseListener(log));
  const timers = wheelTimers(clock);
  const dispatcher = new Dispatcher(
    {
      store,
      hotTier,
      outbox,
      clock,
      metrics,
      timers,
      holdsShard: (shard) => leases.holdsShard(DISPATCH_FAMILY, shard),
      expireShard: (shard) => leases.expire(DISPATCH_FAMILY, shard),
      onError,
    },
    {
      nodeId,
      claimIntervalMs: config.claimIntervalMs,
      claimLookaheadMs: config.claimLookaheadMs,
      claimTtlMs: config.claimTtlMs,
      claimBatchSize: config.claimBatchSize,
      // One connection stays free for the heartbeat, the pre-loader and the reconciler.
      roundGroups: Math.max(1, config.dispatchPgPoolSize - 1),
      drainTimeoutMs: config.dispatchDrainMs,
    },
  ).start();
  leases.subscribe(familyListener(DISPATCH_FAMILY, dispatcher));
  const heartbeat = new Loop(
    () => leases.heartbeat().then(() => false),
    config.leaseHeartbeatMs,
    (error) => onError(error, "lease heartbeat"),
  ).start();

  const loops: Loop[] = [];
  // For the dashboard: what the reconciler did, and the attempts it failed per tenant.
  const reconciling = new ReconcilerActivity();
  const activity = new TenantActivity();
  if (roles.has("preloader")) {
    const preloader = new Preloader(
      store,
      hotTier,
      clock,
      metrics,
      () => new Set(leases.validShards(PRELOAD_FAMILY)),
      { hotWindowMs: config.hotWindowMs, pageSize: config.preloadPageSize },
    );
    loops.push(
      new Loop(
        () => preloader.sweep().then(() => false),
        config.preloadIntervalMs,
        (error) => onError(error, "preload"),
      ).start(config.leaseHeartbeatMs),
    );
  }
  if (roles.has("reconciler")) {
    const executions = new RecordingExecutionStore(
      new PgExecutionStore(pool, {
        rowLevelSecurity: false,
        random: Math.random,
        newId: uuidv7From(clock),
      }),
      activity,
    );
    const reconciler = new Reconciler(store, executions, hotTier, clock, metrics, {
      dispatchTimeoutMs: config.dispatchTimeoutMs,
      rehydrateAheadMs: config.reconcileAheadMs,
      batchSize: config.reconcileBatchSize,
    });
    const step = async () => {
      if (!leases.isLeader) return false;
      const report = await reconciler.run();
      reconciling.ran(report, clock.nowMs());
      if (report.claimsReturned + report.rearmed + report.leasesExpired + report.rehydrated > 0)
        log.info(report, "reconciled");
      return false;
    };
    loops.push(
      new Loop(step, config.reconcileIntervalMs, (error) => onError(error, "reconcile")).start(),
    );
  }

  const server = await startMetricsServer(metrics, config.metricsHost, config.metricsPort);
  log.info({ roles: [...roles], metricsPort: server.port }, "dispatch roles running");
  const report = startNodeReport(
    infra,
    config,
    clock,
    { nodeId, family: "dispatch", roles: [...roles] },
    () => ({
      ...(roles.has("dispatcher") && {
        dispatcher: { wheel_timers: timers.size, shards: Object.fromEntries(dispatcher.heldBy()) },
      }),
      ...(roles.has("reconciler") && {
        reconciler: { leader: leases.isLeader, ...reconciling.describe() },
      }),
    }),
    activity,
    onError,
  );

  return {
    nodeId,
    metricsPort: server.port,
    async stop() {
      await report.stop();
      await Promise.allSettled(loops.map((loop) => loop.stop()));
      await leases.releaseAll().catch((error: unknown) => onError(error, "release leases"));
      await heartbeat.stop();
      await dispatcher.stopAll();
      timers.close();
      await Promise.allSettled([publisher.close(), server.close()]);
      await hot.close();
      await pool.end().catch(() => undefined);
      log.info("dispatch roles stopped");
    },
  };
}
