/**
 * Bytes the worker allocates per task in its own code (`npm run bench:executor-garbage`):
 * a no-op envelope's text through the queue runner (its parse), the queue's
 * limiter and the executor, with the real ExecutionService and
 * RecordingExecutionStore over a store that answers at once, so what is
 * counted is the worker's garbage (async frames, promises, timers, the
 * handler's context), not the Postgres or Kafka clients'. `executor`
 * counts Executor.execute of a parsed envelope alone. At thousands of tasks a
 * second that garbage sets how often the worker's young generation is
 * collected (bench/RESULTS.md, session 36).
 *
 * Run with young semi-spaces large enough that no collection happens while
 * counting (the npm script passes them): the bytes are the growth of the
 * used heap over a measured run, and a run during which V8 collected is
 * refused rather than reported.
 */
import { PerformanceObserver } from "node:perf_hooks";
import v8 from "node:v8";
import { RecordingExecutionStore } from "../node/src/app/dashboard/recording-execution-store.js";
import { TenantActivity } from "../node/src/app/dashboard/tenant-activity.js";
import { ExecutionService } from "../node/src/app/execution/execution-service.js";
import { Executor } from "../node/src/app/execution/executor.js";
import { HandlerMap } from "../node/src/app/execution/handler-registry.js";
import { QueueLimiter } from "../node/src/app/execution/limiter.js";
import { queueRunner } from "../node/src/app/execution/queue-runner.js";
import { type ArmedTask, envelopeJson } from "../node/src/domain/envelope.js";
import type { InboundEnvelope } from "../node/src/domain/inbound-envelope.js";
import type { ExecutionStore } from "../node/src/ports/execution-store.js";
import { noWorkerMetrics } from "../node/src/ports/worker-metrics.js";
import { median } from "./stats.js";

const WARM_UP_TASKS = 30_000;
const TASKS_PER_RUN = 3_000;
const RUNS = 5;

const nowMs = Date.now();
const started = {
  kind: "started" as const,
  execution: {
    attempt: 1,
    maxAttempts: 3,
    runAtMs: nowMs,
    timeoutMs: 30_000,
    leaseExpiresAtMs: nowMs + 60_000,
  },
};
const completed = { kind: "completed" as const, released: [] };
const store = {
  start: async () => started,
  complete: async () => completed,
} as unknown as ExecutionStore;
const onError = (error: unknown) => console.error(error);
const executions = new ExecutionService(
  {
    store: new RecordingExecutionStore(store, new TenantActivity()),
    hotTier: { addDue: async () => undefined },
    onError,
  },
  { hotWindowMs: 60_000 },
);
const executor = new Executor(
  {
    executions,
    handlers: new HandlerMap().register("noop", async () => null),
    metrics: noWorkerMetrics,
    clock: { nowMs: () => Date.now(), monotonicMs: () => performance.now() },
    onError,
  },
  {
    workerId: "bench",
    leaseMs: 30_000,
    heartbeatMs: 10_000,
    dependencyRetryMs: 10,
    maxResultBytes: 1 << 20,
  },
);
const envelope: InboundEnvelope = {
  taskId: "0190c0de-0000-7000-8000-000000000001",
  tenantId: "0190c0de-0000-7000-8000-000000000002",
  type: "noop",
  attempt: 0,
  fencingToken: "1",
  runAtMs: nowMs,
  dispatchedAtMs: nowMs,
  timeoutMs: 30_000,
  idempotencyKey: null,
  payload: null,
  workflowId: null,
};
const armed: ArmedTask = {
  id: envelope.taskId,
  tenantId: envelope.tenantId,
  type: envelope.type,
  payloadJson: "null",
  priority: "standard",
  runAtMs: nowMs,
  attempt: 0,
  fencingToken: envelope.fencingToken,
  timeoutMs: 30_000,
  idempotencyKey: null,
  workflowId: null,
  graceMs: 60_000,
};
const message = { value: envelopeJson(armed, nowMs) };
const run = queueRunner({
  queue: "standard",
  executor,
  limiter: new QueueLimiter(512, 512),
  metrics: noWorkerMetrics,
  maxEnvelopeChars: 1 << 20,
  onMalformed: (refusal) => onError(refusal),
  onError,
});
const delivery = { waiting: () => undefined };

let collections = 0;
new PerformanceObserver((list) => {
  collections += list.getEntries().length;
}).observe({ entryTypes: ["gc"] });

/** Median bytes per task of `task`, over runs during which V8 collected nothing. */
async function bytesPerTask(task: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < WARM_UP_TASKS; i++) await task();
  const runs: number[] = [];
  for (let attempt = 0; runs.length < RUNS && attempt < RUNS * 3; attempt++) {
    // The observer reports in a later turn: let it catch up before and after counting.
    await new Promise((resolve) => setImmediate(resolve));
    const collectionsBefore = collections;
    const before = v8.getHeapStatistics().used_heap_size;
    for (let i = 0; i < TASKS_PER_RUN; i++) await task();
    const after = v8.getHeapStatistics().used_heap_size;
    await new Promise((resolve) => setImmediate(resolve));
    if (collections === collectionsBefore) runs.push(Math.round((after - before) / TASKS_PER_RUN));
  }
  if (runs.length < RUNS) {
    console.error(
      "V8 collected during most runs: run with larger semi-spaces (--max-semi-space-size=256 --min-semi-space-size=256)",
    );
    process.exit(1);
  }
  return runs;
}

const pipeline = await bytesPerTask(() => run(message, delivery));
const executorOnly = await bytesPerTask(() => executor.execute(envelope, "standard"));
const report = {
  bench: "executor-garbage",
  tasks_per_run: TASKS_PER_RUN,
  pipeline_bytes_per_task: { median: median(pipeline), runs: pipeline },
  executor_bytes_per_task: { median: median(executorOnly), runs: executorOnly },
};
console.log(process.argv.includes("--json") ? JSON.stringify(report) : report);
