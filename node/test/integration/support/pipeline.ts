/**
 * The whole pipeline in the test process: the API (startApiFixture), the
 * dispatch roles and, unless a test starts its own, a worker.
 */
import { pino } from "pino";
import { systemClock } from "../../../src/adapters/clock/system-clock.js";
import type { Config } from "../../../src/config/config.js";
import { type RunningRoles, startDispatchRoles } from "../../../src/main/dispatch.js";
import { type RunningWorker, startWorker, type WorkerExtras } from "../../../src/main/worker.js";
import { type ApiFixture, startApiFixture } from "./api.js";
import { newTopicPrefix } from "./kafka.js";
import { fixtureEnv, startRolesChild } from "./roles-child.js";

/**
 * Generous shard leases and quick repairs: on a loaded 2-core machine the
 * in-process dispatcher may still lose a lease, and must recover fast.
 */
export const PIPELINE_TIMINGS = {
  metricsPort: 0,
  workerMetricsPort: 0,
  kafkaPartitions: 2,
  leaseTtlMs: 6000,
  leaseHeartbeatMs: 300,
  leaseSafetyMarginMs: 1000,
  claimIntervalMs: 50,
  claimLookaheadMs: 1000,
  claimTtlMs: 5000,
  dispatchTimeoutMs: 10_000,
  preloadIntervalMs: 500,
  reconcileIntervalMs: 500,
  workerSessionTimeoutMs: 6000,
} satisfies Partial<Config>;

export interface Pipeline extends ApiFixture {
  roles: RunningRoles;
  /** Null when started with `worker: false`. */
  worker: RunningWorker | null;
}

export async function startPipeline(
  name: string,
  overrides: Partial<Config> = {},
  options: { worker?: WorkerExtras | false } = {},
): Promise<Pipeline> {
  const fixture = await startApiFixture({
    topicPrefix: newTopicPrefix(name),
    ...PIPELINE_TIMINGS,
    ...overrides,
  });
  const logger = pino({ level: process.env.CF_TEST_LOG_LEVEL ?? "silent" });
  let roles: RunningRoles | undefined;
  let worker: RunningWorker | null = null;
  try {
    roles = await startDispatchRoles(
      fixture.config,
      systemClock,
      logger,
      new Set(["dispatcher", "preloader", "reconciler"]),
    );
    if (options.worker !== false) {
      worker = await startWorker(fixture.config, systemClock, logger, options.worker);
    }
  } catch (error) {
    await roles?.stop();
    await fixture.stop();
    throw error;
  }
  const running = roles;
  return {
    ...fixture,
    roles: running,
    worker,
    async stop() {
      await worker?.stop();
      await running.stop();
      await fixture.stop();
    },
  };
}

/**
 * A worker of the pipeline's `standard` queue as a child process, for tests
 * that kill, pause or stop it; `env` adds or overrides settings.
 */
export const workerChild = (
  pipeline: Pipeline,
  nodeId: string,
  leaseMs: number,
  env: Record<string, string> = {},
) =>
  startRolesChild("worker", {
    ...fixtureEnv(pipeline, nodeId),
    CF_WORKER_QUEUES: "standard",
    CF_WORKER_METRICS_PORT: "0",
    CF_WORKER_LEASE_MS: String(leaseMs),
    CF_WORKER_HEARTBEAT_MS: "300",
    CF_WORKER_SESSION_TIMEOUT_MS: "6000",
    ...env,
  });
