/**
 * End-to-end dispatch benchmark: offers R tasks per second for S seconds
 * through the HTTP API (batch endpoint, open loop), each due 1–3 s later,
 * with the API and the dispatcher roles in two child processes and
 * Postgres, Redis and Kafka on this machine. A Kafka consumer in this
 * process measures lateness = arrival − run_at of each task's first message.
 *
 *   npm run bench:dispatch -- --rate 5000 --seconds 10 [--json]
 *
 * With --json the last line is one JSON object; its `publish` holds
 * p50_ms, p99_ms, max_ms, published_per_s, lost and early.
 */
import type { ChildProcess } from "node:child_process";
import pg from "pg";
import { benchArgs } from "./args.js";
import {
  type Arrival,
  coresBetween,
  cpuTicksOf,
  deleteBenchKeys,
  deleteKafkaRun,
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
    port: { type: "string", default: "18090" },
  },
});
const ratePerS = Number(args.rate);
const seconds = Number(args.seconds);
const leadMs = Number(args["lead-ms"]);
const spreadMs = Number(args["spread-ms"]);
const port = Number(args.port);
const baseUrl = `http://127.0.0.1:${port}`;
const DATABASE_URL =
  process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/chronofence_bench_dispatch";
const BROKERS = (process.env.KAFKA_BROKERS ?? "127.0.0.1:9092").split(",");
const REDIS_PREFIX = "cf-bench-dispatch";
const TOPIC_PREFIX = `bench-${Date.now()}.`;
const log = (line: string) => {
  if (!args.json) console.log(line);
};

const child = (roles: string, env: Record<string, string>, nodeArgs: string[] = []): ChildProcess =>
  spawnRoles(
    roles,
    { DATABASE_URL, CF_REDIS_PREFIX: REDIS_PREFIX, CF_TOPIC_PREFIX: TOPIC_PREFIX, ...env },
    nodeArgs,
  );

const startApi = () => waitForApi(child("api", { PORT: String(port) }), baseUrl, 200);

async function startDispatcher(): Promise<{ process: ChildProcess; metricsPort: number }> {
  const dispatcher = child(
    "dispatcher,preloader,reconciler",
    { CF_METRICS_PORT: "0" },
    roleNodeArgs(),
  );
  return { process: dispatcher, metricsPort: await readyMetricsPort(dispatcher, "dispatcher") };
}

async function dispatcherLateness(metricsPort: number) {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  let sum = 0;
  let count = 0;
  let within5 = 0;
  for (const line of text.split("\n")) {
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (line.startsWith("cf_dispatch_lateness_seconds_sum")) sum += value;
    if (line.startsWith("cf_dispatch_lateness_seconds_count")) count += value;
    if (line.startsWith('cf_dispatch_lateness_seconds_bucket{le="0.005"')) within5 += value;
  }
  return {
    mean_ms: count ? round((sum / count) * 1000) : 0,
    within_5ms: count ? round(within5 / count) : 0,
    count,
  };
}

/**
 * Where a task's time went before it was published, from the rows: created_at (request
 * accepted) → armed_at (the dispatcher's fenced UPDATE) → run_at. `armed_ahead` below 0 means
 * the task was armed after it was due: it could not be published on time.
 */
async function stagesOf() {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query(`
      SELECT percentile_disc(ARRAY[0.01, 0.5, 0.99]) WITHIN GROUP (ORDER BY ahead_ms) AS ahead,
             percentile_disc(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY since_created_ms) AS since
        FROM (SELECT extract(epoch FROM run_at - armed_at) * 1000 AS ahead_ms,
                     extract(epoch FROM armed_at - created_at) * 1000 AS since_created_ms
                FROM tasks WHERE armed_at IS NOT NULL) s`);
    const [ahead, since] = [rows[0].ahead ?? [], rows[0].since ?? []].map((a: number[]) =>
      a.map((x) => round(Number(x))),
    );
    return {
      armed_ahead_of_run_at_ms: { p1: ahead![0], p50: ahead![1], p99: ahead![2] },
      created_to_armed_ms: { p50: since![0], p99: since![1] },
    };
  } finally {
    await client.end();
  }
}

async function cleanup(children: ChildProcess[]) {
  await stopChildren(children);
  await deleteKafkaRun(BROKERS, TOPIC_PREFIX, [`${TOPIC_PREFIX}bench`]);
  await deleteBenchKeys(REDIS_PREFIX);
}

async function main(): Promise<void> {
  const { apiKey } = await prepareBenchDatabase(DATABASE_URL, [
    "tasks",
    "idempotency_keys",
    "audit_log",
    "leases",
  ]);
  const api = await startApi();
  const dispatcher = await startDispatcher().catch((error: unknown) => {
    api.kill("SIGTERM");
    throw error;
  });
  const children = [api, dispatcher.process];
  try {
    const arrivals = new Map<string, Arrival>();
    const early = { count: 0 };
    const consumer = await startArrivalConsumer(BROKERS, TOPIC_PREFIX, arrivals, early);
    const pids = { api: api.pid!, dispatcher: dispatcher.process.pid!, bench: process.pid };
    const cpuBefore = await cpuTicksOf(pids);
    const cpuStartMs = Date.now();
    log(
      `offering ${ratePerS} tasks/s for ${seconds} s, run_at in ${leadMs}–${leadMs + spreadMs} ms`,
    );
    const accepted = new Map<string, number>();
    const load = await offerThroughApi(
      { baseUrl, apiKey, taskType: "bench", ratePerS, seconds, leadMs, spreadMs },
      accepted,
    );
    const lastRunAtMs = maxOf(accepted.values());
    await waitUntil(
      () => [...accepted.keys()].every((id) => arrivals.has(id)),
      lastRunAtMs + 15_000,
    );
    // Mean cores over the whole run (offering, then draining until the last task arrived).
    const cpuWallS = (Date.now() - cpuStartMs) / 1000;
    const cpuCores = coresBetween(cpuBefore, await cpuTicksOf(pids), cpuWallS);
    const outcome = publishOutcome(accepted, arrivals);
    // CPU per published task: steadier than latency on a machine shared with other work.
    const cpuUsPerTask = Object.fromEntries(
      Object.entries(cpuCores).map(([k, cores]) => [
        k,
        Math.round((cores * cpuWallS * 1e6) / Math.max(1, outcome.published)),
      ]),
    );
    const report = {
      bench: "dispatch",
      offered_per_s: ratePerS,
      seconds,
      run_at_lead_ms: [leadMs, leadMs + spreadMs],
      offered: load.offered,
      accepted: accepted.size,
      rejected: load.rejected,
      not_sent_backpressure: load.notSent,
      /** Batch request → 201: run_at counts from the request, so this is part of the lateness budget. */
      ingest_ack: load.ingest,
      publish: {
        ...outcome.toConsumer,
        published_per_s: outcome.perS,
        lost: outcome.lost,
        early: early.count,
      },
      run_at_to_dispatched_at: outcome.toBroker,
      dispatcher_run_at_to_broker_ack: await dispatcherLateness(dispatcher.metricsPort),
      stages: await stagesOf(),
      cpu_cores: cpuCores,
      cpu_us_per_task: cpuUsPerTask,
      peer: null,
    };
    await consumer.disconnect();
    log(
      `accepted ${report.accepted}/${report.offered} (rejected ${report.rejected}, not sent ${report.not_sent_backpressure}); ` +
        `published ${outcome.published} at ${report.publish.published_per_s}/s, lost ${outcome.lost}, early ${early.count}`,
    );
    log(
      `lateness run_at → consumer: p50 ${report.publish.p50_ms} ms, p99 ${report.publish.p99_ms} ms, max ${report.publish.max_ms} ms`,
    );
    log(
      `run_at → dispatched_at (in the dispatcher): p50 ${report.run_at_to_dispatched_at.p50_ms} ms, p99 ${report.run_at_to_dispatched_at.p99_ms} ms`,
    );
    log(`ingest (batch request → 201): p50 ${load.ingest.p50_ms} ms, p99 ${load.ingest.p99_ms} ms`);
    log(`stages: ${JSON.stringify(report.stages)}`);
    log(`cores: ${JSON.stringify(cpuCores)}`);
    log(`CPU µs per published task: ${JSON.stringify(cpuUsPerTask)}`);
    if (args.json) console.log(JSON.stringify(report));
  } finally {
    await cleanup(children);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
