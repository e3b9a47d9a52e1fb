/**
 * Composition root of the worker role: one consumer (Kafka: a consumer
 * group), Postgres pool, concurrency limiter and executor per queue
 * (critical, standard, bulk, overdue), so that no queue's backlog can take
 * another's fetches, connections or slots; one handler registry, piscina
 * pool, hot-tier connection (retries due soon go straight to the hot tier)
 * and /metrics; all on the infrastructure it is given (role-connections.ts).
 *
 * The overdue queue: envelopes published later than their tenant's grace.
 * They still run — a user who scheduled a task expects it to happen, late
 * rather than never (Temporal and BullMQ run late work too) — but on their
 * own consumer and budget, so a backlog of late tasks does not make on-time
 * critical tasks late as well. Its budget grows into the on-time queues'
 * idle slots (up to three quarters of each, only while none of their own
 * work waits: app/execution/limiter.ts): a run that falls behind, where
 * nearly every task is late, keeps the worker's whole capacity instead of
 * shrinking to the overdue queue's own slots and falling further behind.
 * Leave `overdue` out of --queues on workers that must serve only on-time work.
 */

import { registerBuiltins } from "../adapters/handlers/builtin.js";
import { CPU_BUILTINS_FILE, CpuPool } from "../adapters/handlers/cpu-pool.js";
import { EgressPolicy } from "../adapters/handlers/egress-policy.js";
import { registerUserModule } from "../adapters/handlers/user-module.js";
import { startMetricsServer } from "../adapters/http/metrics-server.js";
import type { Logger } from "../adapters/logging/logger.js";
import { PromWorkerMetrics } from "../adapters/metrics/worker-metrics.js";
import { PgExecutionStore } from "../adapters/pg/execution-store.js";
import type { PgPool } from "../adapters/pg/pool.js";
import { RecordingExecutionStore } from "../app/dashboard/recording-execution-store.js";
import { TenantActivity } from "../app/dashboard/tenant-activity.js";
import { ExecutionService } from "../app/execution/execution-service.js";
import { Executor } from "../app/execution/executor.js";
import { HandlerMap } from "../app/execution/handler-registry.js";
import { QueueLimiter } from "../app/execution/limiter.js";
import { queueRunner } from "../app/execution/queue-runner.js";
import type { Config } from "../config/config.js";
import type { TopicKind } from "../domain/envelope.js";
import type { Clock } from "../ports/clock.js";
import type { HandlerRegistry } from "../ports/handler.js";
import type { QueueConsumer } from "../ports/transport.js";
import { defaultNodeId } from "./dispatch.js";
import { uuidv7From } from "./ids.js";
import { startNodeReport } from "./node-report.js";
import { type RoleInfrastructure, rolePgPool, serviceInfrastructure } from "./role-connections.js";

export interface RunningWorker {
  workerId: string;
  metricsPort: number;
  /**
   * Stops fetching, lets running tasks finish (up to CF_DRAIN_TIMEOUT_MS),
   * then interrupts those still running (fenced, retried at once elsewhere),
   * and commits the offsets of every outcome made durable.
   */
  stop(): Promise<void>;
}

export interface WorkerExtras {
  /** Registers more handlers (tests, embedding applications) after the built-ins and the module. */
  register?: (registry: HandlerRegistry) => void;
}

export const queuesOf = (config: Config): TopicKind[] =>
  [...new Set(config.workerQueues.split(","))] as TopicKind[];

/** The queues this process keeps to itself, dispatcher to worker (CF_DIRECT_QUEUES). */
export const directQueuesOf = (config: Config): Set<TopicKind> =>
  new Set(config.directQueues.split(",").filter(Boolean) as TopicKind[]);

export async function startWorker(
  config: Config,
  clock: Clock,
  logger: Logger,
  extras: WorkerExtras = {},
  infra: RoleInfrastructure = serviceInfrastructure(config),
): Promise<RunningWorker> {
  const workerId = config.nodeId ?? defaultNodeId();
  const log = logger.child({ worker: workerId });
  const onError = (error: unknown, what: string) => log.warn({ err: error }, `${what} failed`);
  const metrics = new PromWorkerMetrics({
    defaultMetrics: true,
    maxLabelValues: config.metricsMaxLabelValues,
  });

  const cpuPool = new CpuPool(config.workerCpuThreads);
  const registry = registerBuiltins(new HandlerMap(), {
    egress: new EgressPolicy(config.httpHandlerAllow),
  });
  registry.register("spin", cpuPool.handler(CPU_BUILTINS_FILE, "spin"));
  if (config.workerHandlers !== "") {
    const types = await registerUserModule(config.workerHandlers, registry, cpuPool);
    log.info({ module: config.workerHandlers, types }, "user handlers registered");
  }
  extras.register?.(registry);

  const topics = infra.transport.publisher(`chronofence-${workerId}-admin`, (error) =>
    onError(error, "kafka admin"),
  );
  await topics.ensureTopics();
  await topics.close();

  const hot = infra.hotTiers.open((error) => onError(error, "redis"));
  await hot.connect().catch((error: unknown) => onError(error, "redis connect"));
  const { hotTier } = hot;

  const pools: PgPool[] = [];
  const executors: Executor[] = [];
  const consumers: QueueConsumer[] = [];
  const newId = uuidv7From(clock);
  // Per-tenant starts, completions and failures, for the dashboard (app/dashboard/tenant-activity.ts).
  const activity = new TenantActivity();
  const limiters = queueLimiters(config);
  const direct = directQueuesOf(config);
  for (const queue of queuesOf(config)) {
    const limiter = limiters.get(queue)!;
    const pool = rolePgPool(
      infra,
      config,
      {
        maxConnections: config.workerPgPoolSize,
        applicationName: `chronofence-worker-${queue}`,
        role: "worker",
      },
      onError,
    );
    pools.push(pool);
    // Starts and completions of one event-loop turn share one statement.
    const store = new PgExecutionStore(pool, {
      rowLevelSecurity: false,
      random: Math.random,
      newId,
      coalesceMax: config.workerCoalesceMax,
      // Full batches may take half the pool; the other half serves heartbeats and failures.
      // The rest of the calls queue into the next statement rather than for a connection.
      coalesceMaxInFlight: Math.max(1, Math.floor(config.workerPgPoolSize / 2)),
      completionLingerMs: config.workerCompletionLingerMs,
      // Direct queues only: in Kafka mode, whose tasks come in fetched batches, it saved no CPU
      // and made the start later (bench/RESULTS.md, session 33).
      busyLingerMs: direct.has(queue) ? config.workerBusyLingerMs : 0,
      nowMs: () => clock.nowMs(),
    });
    const executions = new ExecutionService(
      { store: new RecordingExecutionStore(store, activity), hotTier, onError },
      { hotWindowMs: config.hotWindowMs },
    );
    const executor = new Executor(
      {
        executions,
        handlers: registry,
        clock,
        metrics,
        onError,
        onNoHandler: (type, taskId, outcome) =>
          log.warn(
            { queue, type, taskId, outcome, deadAfterMs: config.workerUnknownTypeDeadAfterMs },
            outcome === "handed_back"
              ? "no handler for this task type here: handed back for another worker"
              : "no worker had a handler for this task type in time: dead-lettered",
          ),
      },
      {
        workerId,
        leaseMs: config.workerLeaseMs,
        heartbeatMs: config.workerHeartbeatMs,
        dependencyRetryMs: config.workerRetryBaseMs,
        maxResultBytes: config.workerMaxResultBytes,
        startMaxRetries: config.workerStartMaxRetries,
        leaseMarginMs: config.workerLeaseMarginMs,
        unknownType: {
          retryMs: config.workerUnknownTypeRetryMs,
          deadAfterMs: config.workerUnknownTypeDeadAfterMs,
        },
      },
    );
    executors.push(executor);
    const consumer = infra.transport.consumer({
      kind: queue,
      clientId: `chronofence-${workerId}-${queue}`,
      // Twice the slots it can hold (its own and those it may borrow): a message is ready the
      // moment one frees. Messages waiting for their tenant's slot (or their run_at) are not
      // counted, up to CF_WORKER_MAX_WAITING.
      maxInFlight: limiter.reach * 2,
      maxWaiting: config.workerMaxWaiting,
      maxRetained: config.workerMaxRetained,
      onError: (error) => onError(error, `kafka consumer ${queue}`),
      onRunning: (up) => metrics.consumerUp(queue, up),
    });
    consumers.push(consumer);
    const run = queueRunner({
      queue,
      executor,
      limiter,
      metrics,
      maxEnvelopeChars: config.kafkaMaxMessageBytes,
      onMalformed: ({ code, reason, taskId, tenantId }, length) =>
        log.warn(
          { queue, code, reason, taskId, tenantId, length },
          "skipped a message that is not an envelope this worker reads (its task, if any, stays ARMED: the reconciler re-arms it)",
        ),
      onError,
    });
    await consumer.start(run);
  }

  const server = await startMetricsServer(metrics, config.metricsHost, config.workerMetricsPort);
  const report = startNodeReport(
    infra,
    config,
    clock,
    { nodeId: workerId, family: "worker", roles: ["worker"] },
    () => ({ worker: { queues: queuesOf(config), types: registry.types() } }),
    activity,
    onError,
  );
  log.info(
    { queues: queuesOf(config), types: registry.types(), metricsPort: server.port },
    "worker running",
  );

  return {
    workerId,
    metricsPort: server.port,
    async stop() {
      await report.stop();
      for (const executor of executors) executor.drain();
      const drained = Promise.allSettled(consumers.map((c) => c.stop()));
      const timer = setTimeout(() => {
        for (const executor of executors) executor.stop();
      }, config.drainTimeoutMs);
      await drained;
      clearTimeout(timer);
      for (const executor of executors) executor.stop();
      await Promise.allSettled([server.close(), cpuPool.close(), ...pools.map((p) => p.end())]);
      await hot.close();
      log.info("worker stopped");
    },
  };
}

/**
 * One limiter per queue; the overdue queue borrows the on-time queues' idle
 * slots (app/execution/limiter.ts), so falling behind does not shrink the
 * worker to the overdue queue's own slots.
 */
function queueLimiters(config: Config): Map<TopicKind, QueueLimiter> {
  const queues = queuesOf(config);
  const limiterOf = (queue: TopicKind, lenders: QueueLimiter[] = []) =>
    new QueueLimiter(concurrencyOf(config, queue), config.workerTenantConcurrency, lenders);
  const limiters = new Map<TopicKind, QueueLimiter>();
  for (const queue of queues) if (queue !== "overdue") limiters.set(queue, limiterOf(queue));
  if (queues.includes("overdue"))
    limiters.set("overdue", limiterOf("overdue", [...limiters.values()]));
  return limiters;
}

function concurrencyOf(config: Config, queue: TopicKind): number {
  switch (queue) {
    case "critical":
      return config.workerConcurrencyCritical;
    case "standard":
      return config.workerConcurrencyStandard;
    case "bulk":
      return config.workerConcurrencyBulk;
    case "overdue":
      return config.workerConcurrencyOverdue;
  }
}
