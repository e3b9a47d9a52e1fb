/**
 * One reconciler pass outside any running process, for the checker's last
 * rule (the reconciler run again after quiescence changes nothing):
 * `chronofence` has no one-shot reconcile command, so this wires the
 * reconciler use case (node/src/app/dispatch/reconciler.ts) to the same
 * adapters the `reconciler` role composes in node/src/main/dispatch.ts, with
 * the chaos topology's settings, runs it once and closes everything.
 */
import { systemClock } from "../../node/src/adapters/clock/system-clock.js";
import { PromDispatchMetrics } from "../../node/src/adapters/metrics/dispatch-metrics.js";
import { PgDispatchStore } from "../../node/src/adapters/pg/dispatch-store.js";
import { PgExecutionStore } from "../../node/src/adapters/pg/execution-store.js";
import { RedisDispatchHotTier } from "../../node/src/adapters/redis/dispatch-hot-tier.js";
import { type ReconcileReport, Reconciler } from "../../node/src/app/dispatch/reconciler.js";
import { resolveConfig } from "../../node/src/config/config.js";
import { uuidv7From } from "../../node/src/main/ids.js";
import { rolePgPool, roleRedis } from "../../node/src/main/role-connections.js";
import { CHAOS_TIMINGS } from "./topology.js";

export async function reconcileOnce(
  databaseUrl: string,
  redisUrl: string,
  redisKeyPrefix: string,
): Promise<ReconcileReport> {
  const config = resolveConfig({
    ...CHAOS_TIMINGS,
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    CF_REDIS_PREFIX: redisKeyPrefix,
  });
  const failures: unknown[] = [];
  const onError = (error: unknown) => failures.push(error);
  const pool = rolePgPool(
    config,
    { maxConnections: 2, applicationName: "chaos-reconcile" },
    onError,
  );
  const redis = roleRedis(config, onError);
  try {
    await redis.connect();
    const executions = new PgExecutionStore(pool, {
      rowLevelSecurity: false,
      random: Math.random,
      newId: uuidv7From(systemClock),
    });
    const reconciler = new Reconciler(
      new PgDispatchStore(pool),
      executions,
      new RedisDispatchHotTier(redis, config.redisKeyPrefix),
      systemClock,
      new PromDispatchMetrics({ defaultMetrics: false }),
      {
        dispatchTimeoutMs: config.dispatchTimeoutMs,
        rehydrateAheadMs: config.reconcileAheadMs,
        batchSize: config.reconcileBatchSize,
      },
    );
    return await reconciler.run();
  } finally {
    redis.disconnect();
    await pool.end().catch(() => undefined);
  }
}
