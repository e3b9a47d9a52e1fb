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
import { type ReconcileReport, Reconciler } from "../../node/src/app/dispatch/reconciler.js";
import { resolveConfig } from "../../node/src/config/config.js";
import { uuidv7From } from "../../node/src/main/ids.js";
import { rolePgPool, serviceInfrastructure } from "../../node/src/main/role-connections.js";
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
  const infra = serviceInfrastructure(config);
  const pool = rolePgPool(
    infra,
    config,
    { maxConnections: 2, applicationName: "chaos-reconcile", role: "dispatch" },
    onError,
  );
  const hot = infra.hotTiers.open(onError);
  try {
    await hot.connect();
    const executions = new PgExecutionStore(pool, {
      rowLevelSecurity: false,
      random: Math.random,
      newId: uuidv7From(systemClock),
    });
    const reconciler = new Reconciler(
      new PgDispatchStore(pool),
      executions,
      hot.dispatch,
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
    await hot.close();
    await pool.end().catch(() => undefined);
  }
}
