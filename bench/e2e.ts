/**
 * End-to-end benchmark: offers R no-op tasks per second for S seconds
 * through the HTTP API (batch endpoint, open loop), each due 1–3 s after its
 * request, with the API, the dispatch roles and the worker role in child
 * processes and Postgres, Redis and Kafka on this machine; then offers the
 * same load with the same delays to BullMQ's delayed jobs on the same Redis
 * (bench/peers/bullmq.ts) and prints both side by side.
 *
 *   npm run bench:e2e -- --rate 5000 --seconds 10 [--json] [--no-peer | --peer-only] [--embedded | --direct | --one-process] [--no-probe]
 *   npm run bench:e2e -- --find-max [--from 500] [--seconds 10] [--json] [--direct | --one-process] [--no-peer]
 *   npm run bench:e2e -- --runs 3 [any flags of a run, or of --find-max]
 *
 * --embedded offers the same load to `chronofence dev` on the embedded
 * default instead (one process; PGlite, in-process hot tier and transport:
 * bench/e2e-embedded.ts), beside BullMQ's run all the same.
 *
 * --direct runs the dispatch roles and the worker in one process with every
 * queue direct (CF_DIRECT_QUEUES: fired envelopes go to the process's own
 * worker in memory, no Kafka), on the same Postgres and Redis; `publish` is
 * then not measured, and the broker's CPU is not counted (nothing uses it).
 *
 * --one-process is --direct with the API in that process too: every role
 * of a single-node deployment in one Node process (`run --roles
 * api,dispatcher,preloader,reconciler,worker`), as `node` in the cores.
 *
 * --no-probe leaves out the bench's own Kafka consumer (`publish`, below):
 * it costs the bench about 0.1 core at 5,000/s and the broker serves its
 * fetches too, load on a saturated machine that BullMQ's run does not
 * carry. Then `publish` is null and `run_at_to_dispatched_at` comes from
 * Postgres.
 *
 * Where each number comes from:
 *  - publish: a Kafka consumer of its own group in this process, arrival − run_at
 *    of each task's first envelope (as bench:dispatch).
 *  - run_at_to_dispatched_at: from that consumer (each task's first
 *    envelope), or with --no-probe from Postgres (the started attempt's).
 *  - worker_start: tasks.started_at − tasks.run_at, read from Postgres after
 *    the run. started_at is the worker's clock when its fenced start's
 *    statement leaves (after any linger of the worker's coalesced
 *    statements), stored per task with microsecond precision, so the percentiles are exact; the
 *    worker's lateness histogram would only give bucket bounds.
 *  - completed_per_s: completions per second while tasks fall due at the
 *    full offered rate (support.ts plateauRate; needs --seconds > the spread).
 *  - lost: accepted (201) but missing from Postgres or in a terminal state
 *    other than COMPLETED (docs/architecture.md, invariant 2). Tasks still pending when
 *    the run ends (the last run_at + --drain-ms) are `unfinished`, not lost:
 *    a system too slow for the offered rate shows there, by status.
 *  - early: tasks started before run_at (Postgres) plus envelopes published
 *    or received before run_at (consumer).
 *  - duplicates: COMPLETED tasks whose handler started more than once
 *    (tasks.attempt, which counts fenced starts, above 1): no task here
 *    fails, so a second start means an attempt was run again (e.g. its
 *    lease expired while it ran). A second start or commit under the same
 *    fencing token cannot happen by construction (both are fenced on the
 *    token and the state); the worker's count of such rejections is
 *    reported as `fenced_rejections` from its metrics.
 *    BullMQ's duplicates are jobs it started more than once (`ats` > 1).
 *
 * --find-max steps each system's offered rate up from --from until it no
 * longer keeps up (bench/e2e-find-max.ts) and reports both maxima.
 *
 * --runs N makes the same run N times in turn and reports each run and the
 * medians of both systems' figures (bench/e2e-runs.ts); with --find-max, N
 * passes and the median of each system's maximum.
 *
 * With --json the last line is one JSON object: `publish`, `worker_start`
 * ({p50_ms, p99_ms, max_ms}), `dispatched_at_to_worker_start` (the envelope's
 * dispatched_at to the fenced start: transport and worker intake),
 * `worker_event_loop_lag_max_ms` and `dispatcher_event_loop_lag_max_ms`
 * ({median, max} of the process's longest stall in each second; the
 * dispatcher's null in direct mode, where it is the worker's process),
 * `completed_per_s`, `lost`, `early`,
 * `duplicates`, and `peer` (BullMQ's figures) with `ratio`.
 */
import type { ChildProcess } from "node:child_process";
import os from "node:os";
import pg from "pg";
import { TOPICS } from "../node/src/domain/envelope.js";
import { benchArgs } from "./args.js";
import { runEmbedded } from "./e2e-embedded.js";
import { findMax } from "./e2e-find-max.js";
import { counterOf, executionOutcome, readTasks } from "./e2e-outcome.js";
import { repeatFindMax, repeatRuns } from "./e2e-runs.js";
import { type PeerReport, runBullmqPeer } from "./peers/bullmq.js";
import { type LedgerMark, ledgerBetween, markLedger } from "./pg-ledger.js";
import { median } from "./stats.js";
import {
  type Arrival,
  coresBetween,
  cpuTicksOf,
  cpuUsPerTask,
  deleteBenchKeys,
  deleteKafkaRun,
  type Lateness,
  maxOf,
  offerThroughApi,
  openLoopOptions,
  prepareBenchDatabase,
  publishOutcome,
  readyMetricsPort,
  roleNodeArgs,
  round,
  spawnRoles,
  startArrivalConsumer,
  stopChildren,
  waitForApi,
  waitUntil,
} from "./support.js";

const { values: args } = benchArgs({
  options: {
    ...openLoopOptions,
    "drain-ms": { type: "string", default: "30000" },
    workers: { type: "string", default: "1" },
    "peer-concurrency": { type: "string", default: "100" },
    port: { type: "string", default: "18091" },
    "no-peer": { type: "boolean", default: false },
    "peer-only": { type: "boolean", default: false },
    embedded: { type: "boolean", default: false },
    direct: { type: "boolean", default: false },
    "one-process": { type: "boolean", default: false },
    "no-probe": { type: "boolean", default: false },
    "metrics-port": { type: "string", default: "18092" },
    "find-max": { type: "boolean", default: false },
    from: { type: "string", default: "500" },
    runs: { type: "string", default: "1" },
  },
});
const ratePerS = Number(args.rate);
const seconds = Number(args.seconds);
const leadMs = Number(args["lead-ms"]);
const spreadMs = Number(args["spread-ms"]);
const drainMs = Number(args["drain-ms"]);
/** --one-process: direct mode with the API in the node's process too. */
const oneProcess = args["one-process"];
const direct = args.direct || oneProcess;
/** Whether the bench runs its arrival consumer (a consumer group of its own, which the broker serves too). */
const probing = !direct && !args["no-probe"];
const workerProcesses = Number(args.workers);
const port = Number(args.port);
const baseUrl = `http://127.0.0.1:${port}`;
const DATABASE_URL =
  process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/chronofence_bench_e2e";
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const BROKERS = (process.env.KAFKA_BROKERS ?? "127.0.0.1:9092").split(",");
const REDIS_PREFIX = "cf-bench-e2e";
const TOPIC_PREFIX = `bench-e2e-${Date.now()}.`;
/** The worker role's consumer groups (adapters/kafka/kafka-task-consumer.ts), deleted after the run. */
const WORKER_GROUPS = TOPICS.map((kind) => `${TOPIC_PREFIX}chronofence-workers.${kind}`);
const log = (line: string) => {
  if (!args.json) console.log(line);
};

const child = (roles: string, env: Record<string, string> = {}): ChildProcess =>
  spawnRoles(
    roles,
    {
      DATABASE_URL,
      REDIS_URL,
      KAFKA_BROKERS: BROKERS.join(","),
      CF_REDIS_PREFIX: REDIS_PREFIX,
      CF_TOPIC_PREFIX: TOPIC_PREFIX,
      CF_METRICS_PORT: "0",
      CF_WORKER_METRICS_PORT: "0",
      // Lease hand-overs at shutdown are warnings; they would bury the report.
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "error",
      ...env,
    },
    roleNodeArgs(), // BENCH_PROFILE_DIR=dir: every role writes a CPU profile there
  );

/**
 * The offered tasks all belong to one tenant, so this is a single-tenant
 * deployment: the per-tenant cap (a fairness limit between tenants, half the
 * queue by default) is lifted to the queue's concurrency, which is raised to
 * 512 slots (a no-op task holds one through its Postgres start and commit).
 * Either can be overridden from the environment.
 */
const SINGLE_TENANT_WORKER = {
  CF_WORKER_CONCURRENCY_STANDARD: process.env.CF_WORKER_CONCURRENCY_STANDARD ?? "512",
  CF_WORKER_TENANT_CONCURRENCY: process.env.CF_WORKER_TENANT_CONCURRENCY ?? "512",
};

interface Roles {
  api: ChildProcess;
  dispatcher: ChildProcess;
  /** Null in direct mode: the dispatcher runs in the worker's process, whose sample covers both. */
  dispatcherMetricsPort: number | null;
  workers: Array<{ process: ChildProcess; metricsPort: number }>;
}

async function startRoles(children: ChildProcess[]): Promise<Roles> {
  if (oneProcess) return startDirectNode(children, null);
  const api = child("api", { PORT: String(port) });
  children.push(api);
  await waitForApi(api, baseUrl, 200);
  if (direct) return startDirectNode(children, api);
  const dispatcher = child("dispatcher,preloader,reconciler");
  children.push(dispatcher);
  const dispatcherMetricsPort = await readyMetricsPort(dispatcher, "dispatcher");
  const workers = [];
  for (let i = 0; i < workerProcesses; i++) {
    const worker = child("worker", SINGLE_TENANT_WORKER);
    children.push(worker);
    // `ready` comes once the worker's consumers have joined their groups.
    workers.push({ process: worker, metricsPort: await readyMetricsPort(worker, "worker") });
  }
  return { api, dispatcher, dispatcherMetricsPort, workers };
}

/** The direct node; with no API process of its own (`--one-process`), it serves the API too. */
async function startDirectNode(children: ChildProcess[], api: ChildProcess | null): Promise<Roles> {
  const node = child(`${api ? "" : "api,"}dispatcher,preloader,reconciler,worker`, {
    ...SINGLE_TENANT_WORKER,
    CF_DIRECT_QUEUES: TOPICS.join(","),
    ...(api === null && { PORT: String(port) }),
  });
  children.push(node);
  // Its dispatch roles print `ready` first, then its worker: the worker's port has its metrics.
  const metricsPort = await readyMetricsPort(node, "node", /roles=worker metrics_port=(\d+)/);
  if (api === null) await waitForApi(node, baseUrl, 200); // the API starts after the `ready` lines
  return {
    api: api ?? node,
    dispatcher: node,
    dispatcherMetricsPort: null,
    workers: [{ process: node, metricsPort }],
  };
}

async function runChronofence() {
  const { apiKey } = await prepareBenchDatabase(DATABASE_URL, [
    "tasks",
    "idempotency_keys",
    "audit_log",
    "leases",
    "dead_letters",
  ]);
  const children: ChildProcess[] = [];
  const db = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
  try {
    const roles = await startRoles(children);
    const arrivals = new Map<string, Arrival>();
    const publishEarly = { count: 0 };
    const consumer = probing
      ? await startArrivalConsumer(BROKERS, TOPIC_PREFIX, arrivals, publishEarly)
      : null;
    // A process holding several roles is counted once, under the first name given here.
    const pids: Record<string, number> = { bench: process.pid };
    const count = (name: string, pid: number) => {
      if (!Object.values(pids).includes(pid)) pids[name] = pid;
    };
    count(direct ? "node" : "dispatcher", roles.dispatcher.pid!);
    count("api", roles.api.pid!);
    for (const [i, w] of roles.workers.entries()) count(`worker_${i}`, w.process.pid!);
    const ledgerBefore = await markLedger(db);
    const cpuBefore = await cpuTicksOf(pids);
    const cpuStartMs = Date.now();
    const accepted = new Map<string, number>();
    const eventLoop = sampleEventLoopLag(roles.workers[0]!.metricsPort);
    const dispatcherEventLoop =
      roles.dispatcherMetricsPort === null ? null : sampleEventLoopLag(roles.dispatcherMetricsPort);
    const load = await offerThroughApi(
      { baseUrl, apiKey, taskType: "noop", ratePerS, seconds, leadMs, spreadMs },
      accepted,
    );
    const lastRunAtMs = maxOf(accepted.values());
    // The workers' own count of durable completions: a count of the run's rows in Postgres
    // scanned them all at each poll, in the run's Postgres CPU (BullMQ's is a ZCARD). The
    // outcome below still reads every task from Postgres.
    await waitUntil(
      async () => {
        let completed = 0;
        for (const w of roles.workers)
          completed += await counterOf(
            w.metricsPort,
            "cf_worker_outcomes_total",
            'outcome="completed"',
          );
        return completed >= accepted.size;
      },
      lastRunAtMs + drainMs,
      200,
    );
    const workerEventLoop = eventLoop.stop();
    const dispatcherEventLoopLag = dispatcherEventLoop?.stop() ?? null;
    const cpuAfter = await cpuTicksOf(pids);
    const cpuCores = coresBetween(cpuBefore, cpuAfter, (Date.now() - cpuStartMs) / 1000);
    await consumer?.disconnect();
    const publish = publishOutcome(accepted, arrivals);
    const execution = executionOutcome(
      { startMs: load.startMs, seconds, leadMs, spreadMs },
      accepted,
      await readTasks(db),
    );
    let fencedRejections = 0;
    for (const w of roles.workers)
      fencedRejections += await counterOf(w.metricsPort, "cf_worker_stale_token_total");
    return {
      offered: load.offered,
      accepted: accepted.size,
      rejected: load.rejected,
      not_sent_backpressure: load.notSent,
      ingest_ack: load.ingest,
      publish: probing
        ? { ...publish.toConsumer, published_per_s: publish.perS, not_published: publish.lost }
        : null,
      run_at_to_dispatched_at: probing ? publish.toBroker : execution.runAtToDispatched,
      worker_start: execution.workerStart,
      dispatched_at_to_worker_start: execution.dispatchedToStart,
      completed: execution.completed,
      completed_per_s: execution.completedPerS,
      lost: execution.lost,
      unfinished: execution.unfinished,
      not_completed_by_status: execution.notCompleted,
      early: execution.early + publishEarly.count,
      duplicates: execution.duplicates,
      fenced_rejections: fencedRejections,
      worker_event_loop_lag_max_ms: workerEventLoop,
      dispatcher_event_loop_lag_max_ms: dispatcherEventLoopLag,
      worker_processes: workerProcesses,
      cpu_cores: cpuCores,
      // Every process that serves Chronofence: its roles, Postgres, Redis, the broker.
      cpu_us_per_task: cpuUsPerTask(
        cpuBefore,
        cpuAfter,
        execution.completed,
        (group) => group !== "bench" && group !== "other" && !(direct && group === "kafka"),
      ),
      pg_ledger: await stopThenLedger(children, db, ledgerBefore, accepted.size),
    };
  } finally {
    await stopChildren(children);
    await db.end();
    await deleteKafkaRun(BROKERS, TOPIC_PREFIX, [`${TOPIC_PREFIX}bench`, ...WORKER_GROUPS]);
    await deleteBenchKeys(REDIS_PREFIX);
  }
}

/**
 * A role process's longest event-loop stall in each second of the run
 * (prom-client's lag gauges, reset at each scrape): the median second's and
 * the worst. A task due during a stall starts after it.
 */
function sampleEventLoopLag(metricsPort: number) {
  const samples: number[] = [];
  const timer = setInterval(async () => {
    samples.push(await counterOf(metricsPort, "cf_nodejs_eventloop_lag_max_seconds"));
  }, 1000);
  return {
    stop() {
      clearInterval(timer);
      const ms = samples.map((s) => Math.round(s * 1000)).sort((a, b) => a - b);
      return ms.length === 0 ? null : { median: median(ms), max: ms[ms.length - 1]! };
    },
  };
}

/** The roles' Postgres backends flush their statistics when they exit: stop them first. */
async function stopThenLedger(
  children: ChildProcess[],
  db: pg.Client,
  before: LedgerMark,
  tasks: number,
) {
  await stopChildren(children);
  children.length = 0;
  return ledgerBetween(db, before, tasks);
}

const ratio = (ours: number, theirs: number): number | null =>
  theirs === 0 ? null : round(ours / theirs);

function line(name: string, l: Lateness | null): string {
  return l === null
    ? `${name}: n/a`
    : `${name}: p50 ${l.p50_ms} ms, p99 ${l.p99_ms} ms, max ${l.max_ms} ms`;
}

async function main(): Promise<void> {
  const runs = Number(args.runs);
  if (!Number.isInteger(runs) || runs < 1) {
    console.error("--runs takes a whole number of runs, 1 or more");
    process.exit(2);
  }
  if (runs > 1)
    return (args["find-max"] ? repeatFindMax : repeatRuns)(runs, process.argv.slice(2), args.json);
  if (args["find-max"])
    return findMax(Number(args.from), seconds, args.json, {
      direct,
      oneProcess,
      peer: !args["no-peer"],
    });
  const loadAvgBefore = os.loadavg().map(round);
  log(
    `offering ${ratePerS} no-op tasks/s for ${seconds} s, run_at in ${leadMs}–${leadMs + spreadMs} ms; ` +
      `load average before: ${loadAvgBefore.join(" ")}`,
  );
  const ours = args["peer-only"]
    ? null
    : args.embedded
      ? await runEmbedded({
          ratePerS,
          seconds,
          leadMs,
          spreadMs,
          drainMs,
          port,
          metricsPort: Number(args["metrics-port"]),
          workerEnv: SINGLE_TENANT_WORKER,
        })
      : await runChronofence();
  if (ours) {
    const shape = args.embedded
      ? "chronofence dev on the embedded default: one process"
      : oneProcess
        ? "one process: the API, the dispatch roles and the worker, every queue in memory"
        : direct
          ? "direct: the dispatch roles and the worker in one process, every queue in memory"
          : `${workerProcesses} worker process(es)`;
    log(
      `Chronofence (${shape}, standard concurrency ` +
        `${SINGLE_TENANT_WORKER.CF_WORKER_CONCURRENCY_STANDARD}, per tenant ` +
        `${SINGLE_TENANT_WORKER.CF_WORKER_TENANT_CONCURRENCY}):`,
    );
    log(
      `  accepted ${ours.accepted}/${ours.offered} (rejected ${ours.rejected}, not sent ${ours.not_sent_backpressure}); ` +
        `completed ${ours.completed} (${ours.completed_per_s}/s in the plateau); lost ${ours.lost}, ` +
        `unfinished ${ours.unfinished} ${JSON.stringify(ours.not_completed_by_status)}, ` +
        `early ${ours.early}, duplicates ${ours.duplicates}, fenced rejections ${ours.fenced_rejections}`,
    );
    log(`  ${line("ingest (batch request → 201)", ours.ingest_ack)}`);
    log(`  ${line("publish (run_at → consumer)", ours.publish)}`);
    log(`  ${line("run_at → dispatched_at", ours.run_at_to_dispatched_at)}`);
    log(`  ${line("worker start (run_at → started_at)", ours.worker_start)}`);
    if ("dispatched_at_to_worker_start" in ours)
      log(`  ${line("dispatched_at → started_at", ours.dispatched_at_to_worker_start)}`);
    if ("worker_event_loop_lag_max_ms" in ours)
      log(
        `  worker event loop, longest stall per second: ${JSON.stringify(ours.worker_event_loop_lag_max_ms)} ms`,
      );
    if ("dispatcher_event_loop_lag_max_ms" in ours && ours.dispatcher_event_loop_lag_max_ms)
      log(
        `  dispatcher event loop, longest stall per second: ${JSON.stringify(ours.dispatcher_event_loop_lag_max_ms)} ms`,
      );
    log(`  cores: ${JSON.stringify(ours.cpu_cores)}`);
  }
  let peer: (PeerReport & { ratio: Record<string, number | null> | null }) | null = null;
  if (!args["no-peer"]) {
    const report = await runBullmqPeer({
      redisUrl: REDIS_URL,
      ratePerS,
      seconds,
      leadMs,
      spreadMs,
      workerProcesses,
      concurrency: Number(args["peer-concurrency"]),
    });
    peer = {
      ...report,
      ratio: ours && {
        /** Chronofence ÷ BullMQ: below 1 means Chronofence starts closer to run_at. */
        worker_start_p50: ratio(ours.worker_start.p50_ms, report.worker_start.p50_ms),
        worker_start_p99: ratio(ours.worker_start.p99_ms, report.worker_start.p99_ms),
        worker_start_max: ratio(ours.worker_start.max_ms, report.worker_start.max_ms),
        /** Chronofence ÷ BullMQ: above 1 means Chronofence completes more per second. */
        completed_per_s:
          ours.completed_per_s === null || report.completed_per_s === null
            ? null
            : ratio(ours.completed_per_s, report.completed_per_s),
      },
    };
    log(
      `BullMQ ${report.version} (${report.worker_processes} worker process(es), concurrency ${report.concurrency}):`,
    );
    log(
      `  accepted ${report.accepted}/${report.offered} (rejected ${report.rejected}, not sent ${report.not_sent_backpressure}); ` +
        `completed ${report.completed} (${report.completed_per_s}/s in the plateau); lost ${report.lost}, ` +
        `unfinished ${report.unfinished}, early ${report.early}, duplicates ${report.duplicates}`,
    );
    log(`  ${line("ingest (addBulk → resolved)", report.ingest_ack)}`);
    log(`  ${line("worker start (due → processedOn)", report.worker_start)}`);
    log(`  cores: ${JSON.stringify(report.cpu_cores)}`);
    if (peer.ratio) log(`ratios Chronofence / BullMQ: ${JSON.stringify(peer.ratio)}`);
  }
  if (args.json) {
    console.log(
      JSON.stringify({
        bench: "e2e",
        offered_per_s: ratePerS,
        seconds,
        embedded: args.embedded,
        direct,
        one_process: oneProcess,
        run_at_lead_ms: [leadMs, leadMs + spreadMs],
        load_avg_before: loadAvgBefore,
        cores: os.cpus().length,
        worker_env: SINGLE_TENANT_WORKER,
        ...(ours ?? { publish: null, worker_start: null }),
        peer,
      }),
    );
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
