/**
 * Composition root of the planner role: its own Postgres pool (as
 * chronofence_planner: it works across tenants), hot-tier connection, `plan:<shard>` leases and
 * /metrics listener, on the infrastructure it is given (role-connections.ts).
 * It shares nothing with the dispatch roles, so it can run beside them or
 * alone (`chronofence run --roles planner`).
 */
import { startMetricsServer } from "../adapters/http/metrics-server.js";
import type { Logger } from "../adapters/logging/logger.js";
import { PromDispatchMetrics } from "../adapters/metrics/dispatch-metrics.js";
import { PromPlannerMetrics } from "../adapters/metrics/planner-metrics.js";
import { PgLeaseStore } from "../adapters/pg/lease-store.js";
import { PgPlanStore } from "../adapters/pg/plan-store.js";
import { PLAN_FAMILY, Planner, planLeasesOf } from "../app/schedules/planner.js";
import { LeaseManager, loggingLeaseListener } from "../app/shared/leases.js";
import { Loop } from "../app/shared/loop.js";
import type { Config } from "../config/config.js";
import type { Clock } from "../ports/clock.js";
import { defaultNodeId, type RunningRoles } from "./dispatch.js";
import { uuidv7From } from "./ids.js";
import { startNodeReport } from "./node-report.js";
import { type RoleInfrastructure, rolePgPool, serviceInfrastructure } from "./role-connections.js";

/** `metricsPort` overrides the config's when another role of the process listens there. */
export async function startPlanner(
  config: Config,
  clock: Clock,
  logger: Logger,
  metricsPort = config.metricsPort,
  infra: RoleInfrastructure = serviceInfrastructure(config),
): Promise<RunningRoles> {
  const nodeId = config.nodeId ?? defaultNodeId();
  const log = logger.child({ node: nodeId, role: "planner" });
  const onError = (error: unknown, what: string) => log.warn({ err: error }, `${what} failed`);
  const pool = rolePgPool(
    infra,
    config,
    {
      maxConnections: config.plannerPgPoolSize,
      applicationName: "chronofence-planner",
      role: "planner",
    },
    onError,
  );
  const hot = infra.hotTiers.open((error) => onError(error, "redis"));
  const { hotTier } = hot;
  await hot.connect().catch((error: unknown) => onError(error, "redis connect"));
  const metrics = new PromDispatchMetrics({ defaultMetrics: true });

  const leases = new LeaseManager(new PgLeaseStore(pool), clock, metrics, {
    nodeId,
    ttlMs: config.leaseTtlMs,
    safetyMarginMs: config.leaseSafetyMarginMs,
    families: [PLAN_FAMILY],
    wantLeader: false,
    onError,
  }).subscribe(loggingLeaseListener(log)); // nothing to drain: every write is fenced and idempotent
  const planner = new Planner(
    new PgPlanStore(pool),
    hotTier,
    clock,
    uuidv7From(clock),
    planLeasesOf(leases),
    new PromPlannerMetrics(metrics.registry),
    {
      nodeId,
      planAheadMs: config.cronPlanAheadMs,
      overlapLeadMs: config.cronOverlapLeadMs,
      misfireGraceMs: config.cronMisfireGraceMs,
      fireAllCap: config.cronFireAllCap,
      maxPerPass: config.planMaxPerPass,
      batchSize: config.planBatchSize,
      hotWindowMs: config.hotWindowMs,
    },
    onError,
  );

  const heartbeat = new Loop(
    () => leases.heartbeat().then(() => false),
    config.leaseHeartbeatMs,
    (error) => onError(error, "lease heartbeat"),
  ).start();
  const planning = new Loop(
    async () => (await planner.pass()).more,
    config.planIntervalMs,
    (error) => onError(error, "plan pass"),
  ).start(config.leaseHeartbeatMs);

  const server = await startMetricsServer(metrics, config.metricsHost, metricsPort);
  log.info({ metricsPort: server.port }, "planner running");
  const report = startNodeReport(
    infra,
    config,
    clock,
    { nodeId, family: "planner", roles: ["planner"] },
    () => ({ planner: { plan_shards: leases.validShards(PLAN_FAMILY) } }),
    null,
    onError,
  );
  return {
    nodeId,
    metricsPort: server.port,
    async stop() {
      await report.stop();
      await planning.stop();
      await leases.releaseAll().catch((error: unknown) => onError(error, "release leases"));
      await heartbeat.stop();
      await server.close();
      await hot.close();
      await pool.end().catch(() => undefined);
      log.info("planner stopped");
    },
  };
}
