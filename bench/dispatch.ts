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
import { type ChildProcess, spawn } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { Kafka, logLevel } from "kafkajs";
import pg from "pg";
import { TOPICS, topicName } from "../node/src/domain/envelope.js";
import { deleteBenchKeys, prepareBenchDatabase, root, waitForApi } from "./support.js";

const { values: args } = parseArgs({
  options: {
    json: { type: "boolean", default: false },
    rate: { type: "string", default: "5000" },
    seconds: { type: "string", default: "10" },
    "lead-ms": { type: "string", default: "1000" },
    "spread-ms": { type: "string", default: "2000" },
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
const TICK_MS = 10;
const MAX_REQUEST_TASKS = 1000;
const MAX_IN_FLIGHT = 32;
const log = (line: string) => {
  if (!args.json) console.log(line);
};

interface Offered {
  runAtMs: number;
}
interface Arrival {
  arrivedMs: number;
  dispatchedMs: number;
}

function child(roles: string, env: Record<string, string>, nodeArgs: string[] = []): ChildProcess {
  const cli = [path.join(root, "bin/chronofence.js"), "run", "--roles", roles];
  return spawn(process.execPath, [...nodeArgs, ...cli], {
    env: {
      ...process.env,
      DATABASE_URL,
      HOST: "127.0.0.1",
      CF_REDIS_PREFIX: REDIS_PREFIX,
      CF_TOPIC_PREFIX: TOPIC_PREFIX,
      LOG_LEVEL: "warn",
      ...env,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
}

const startApi = () => waitForApi(child("api", { PORT: String(port) }), baseUrl, 200);

async function startDispatcher(): Promise<{ process: ChildProcess; metricsPort: number }> {
  // --cpu-prof is refused in NODE_OPTIONS: it goes on the command line.
  const profile = process.env.BENCH_PROFILE_DIR
    ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`]
    : [];
  const dispatcher = child("dispatcher,preloader,reconciler", { CF_METRICS_PORT: "0" }, profile);
  const metricsPort = await new Promise<number>((resolve, reject) => {
    let out = "";
    dispatcher.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = /metrics_port=(\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    dispatcher.once("exit", (code) => reject(new Error(`dispatcher exited (${code})`)));
  });
  return { process: dispatcher, metricsPort };
}

async function startConsumer(arrivals: Map<string, Arrival>, early: { count: number }) {
  const kafka = new Kafka({
    clientId: "bench-consumer",
    brokers: BROKERS,
    logLevel: logLevel.NOTHING,
  });
  const consumer = kafka.consumer({ groupId: `${TOPIC_PREFIX}bench`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({
    topics: TOPICS.map((kind) => topicName(TOPIC_PREFIX, kind)),
    fromBeginning: true,
  });
  const joined = new Promise<void>((resolve) =>
    consumer.on(consumer.events.GROUP_JOIN, () => resolve()),
  );
  await consumer.run({
    eachBatch: async ({ batch }) => {
      const arrivedMs = Date.now();
      for (const message of batch.messages) {
        const envelope = JSON.parse(message.value!.toString()) as {
          task_id: string;
          run_at: string;
          dispatched_at: string;
        };
        const dispatchedMs = Date.parse(envelope.dispatched_at);
        if (arrivedMs < Date.parse(envelope.run_at) || dispatchedMs < Date.parse(envelope.run_at))
          early.count++;
        if (!arrivals.has(envelope.task_id))
          arrivals.set(envelope.task_id, { arrivedMs, dispatchedMs });
      }
    },
  });
  await joined;
  return consumer;
}

/** Open loop: every tick, offers what the rate says is due, whatever the answers' latency. */
async function offer(apiKey: string, offered: Map<string, Offered>) {
  const startMs = Date.now();
  let sent = 0;
  let inFlight = 0;
  let rejected = 0;
  let skipped = 0;
  const pending = new Set<Promise<void>>();
  const ackMs: number[] = [];
  const send = (count: number) => {
    const body = JSON.stringify({
      tasks: Array.from({ length: count }, (_, i) => ({
        type: "bench",
        payload: { i },
        delay_ms: Math.round(leadMs + Math.random() * spreadMs),
      })),
    });
    inFlight++;
    const sentMs = Date.now();
    const request = fetch(`${baseUrl}/v1/tasks/batch`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body,
    })
      .then(async (response) => {
        if (response.status !== 201) {
          rejected += count;
          await response.text();
          return;
        }
        ackMs.push(Date.now() - sentMs);
        const answer = (await response.json()) as { tasks: Array<{ id: string; run_at?: string }> };
        for (const item of answer.tasks) {
          if (item.run_at) offered.set(item.id, { runAtMs: Date.parse(item.run_at) });
        }
      })
      .catch(() => {
        rejected += count;
      })
      .finally(() => {
        inFlight--;
        pending.delete(request);
      });
    pending.add(request);
  };
  while (Date.now() - startMs < seconds * 1000) {
    const due = Math.floor(((Date.now() - startMs) / 1000) * ratePerS) - sent;
    for (let left = due; left > 0; left -= MAX_REQUEST_TASKS) {
      const count = Math.min(left, MAX_REQUEST_TASKS);
      if (inFlight >= MAX_IN_FLIGHT) skipped += count;
      else send(count);
      sent += count;
    }
    await new Promise((resolve) => setTimeout(resolve, TICK_MS));
  }
  await Promise.all(pending);
  ackMs.sort((a, b) => a - b);
  const ingest = {
    p50_ms: percentile(ackMs, 50),
    p99_ms: percentile(ackMs, 99),
    max_ms: ackMs[ackMs.length - 1] ?? 0,
  };
  return { offered: sent, rejected, skipped, elapsedS: (Date.now() - startMs) / 1000, ingest };
}

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0
    ? 0
    : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const round = (x: number) => Math.round(x * 100) / 100;

/** The Postgres backends serving the bench database (other databases on this server are not ours). */
async function benchBackends(): Promise<Array<{ pid: number; role: string }>> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query(
      "SELECT pid, application_name FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
    );
    return rows.map((r) => ({
      pid: r.pid as number,
      role: /api/.test(r.application_name) ? "api" : "dispatch",
    }));
  } finally {
    await client.end();
  }
}

async function cpuTicksOf(pids: Record<string, number>): Promise<Record<string, number>> {
  const ticksOf = async (pid: number | string) => {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return {
      comm: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")),
      ticks: Number(fields[11] ?? 0) + Number(fields[12] ?? 0),
    };
  };
  const ticks: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) ticks[name] = (await ticksOf(pid)).ticks;
  for (const { pid, role } of await benchBackends()) {
    ticks[`pg:${role}:${pid}`] = (await ticksOf(pid)).ticks;
  }
  let kafka = 0;
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const { comm, ticks: t } = await ticksOf(pid);
    if (comm === "java") kafka += t;
    else if (comm.startsWith("redis-server")) ticks.redis = (ticks.redis ?? 0) + t;
  }
  return { ...ticks, kafka };
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
  for (const c of children) c.kill("SIGTERM");
  await Promise.all(
    children.map((c) => (c.exitCode === null ? new Promise((r) => c.once("exit", r)) : null)),
  );
  const kafka = new Kafka({
    clientId: "bench-admin",
    brokers: BROKERS,
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  await admin
    .deleteTopics({ topics: TOPICS.map((k) => topicName(TOPIC_PREFIX, k)) })
    .catch(() => undefined);
  await admin.deleteGroups([`${TOPIC_PREFIX}bench`]).catch(() => undefined);
  await admin.disconnect();
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
    const consumer = await startConsumer(arrivals, early);
    const pids = { api: api.pid!, dispatcher: dispatcher.process.pid!, bench: process.pid };
    const cpuBefore = await cpuTicksOf(pids);
    const cpuStartMs = Date.now();
    log(
      `offering ${ratePerS} tasks/s for ${seconds} s, run_at in ${leadMs}–${leadMs + spreadMs} ms`,
    );
    const offered = new Map<string, Offered>();
    const load = await offer(apiKey, offered);
    const lastRunAtMs = Math.max(...[...offered.values()].map((o) => o.runAtMs));
    const deadlineMs = lastRunAtMs + 15_000;
    while (Date.now() < deadlineMs && [...offered.keys()].some((id) => !arrivals.has(id))) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const cpuAfter = await cpuTicksOf(pids);
    const cpuWallS = (Date.now() - cpuStartMs) / 1000;
    const lateness: number[] = [];
    const toBroker: number[] = [];
    let lost = 0;
    let firstMs = Number.POSITIVE_INFINITY;
    let lastMs = 0;
    for (const [id, { runAtMs }] of offered) {
      const arrival = arrivals.get(id);
      if (!arrival) {
        lost++;
        continue;
      }
      lateness.push(arrival.arrivedMs - runAtMs);
      toBroker.push(arrival.dispatchedMs - runAtMs);
      firstMs = Math.min(firstMs, arrival.arrivedMs);
      lastMs = Math.max(lastMs, arrival.arrivedMs);
    }
    lateness.sort((a, b) => a - b);
    toBroker.sort((a, b) => a - b);
    const publishedPerS = lateness.length / Math.max(0.001, (lastMs - firstMs) / 1000);
    // Mean cores over the whole run (offering, then draining until the last task arrived).
    const cpuCores: Record<string, number> = {};
    // CPU per published task: steadier than latency on a machine shared with other work.
    const cpuUsPerTask: Record<string, number> = {};
    // Per backend of the bench database: one that connected during the run counts from zero.
    const cpuTicks: Record<string, number> = { "postgres for api": 0, "postgres for dispatch": 0 };
    for (const key of Object.keys(cpuAfter).filter((k) => k.startsWith("pg:"))) {
      const role = key.split(":")[1]!;
      cpuTicks[`postgres for ${role}`]! += cpuAfter[key]! - (cpuBefore[key] ?? 0);
    }
    for (const key of Object.keys(cpuAfter).filter((k) => !k.startsWith("pg:"))) {
      cpuTicks[key] = cpuAfter[key]! - (cpuBefore[key] ?? 0);
    }
    for (const [key, ticks] of Object.entries(cpuTicks)) {
      cpuCores[key] = round(ticks / 100 / cpuWallS);
      cpuUsPerTask[key] = Math.round((ticks * 10_000) / Math.max(1, lateness.length));
    }
    const report = {
      bench: "dispatch",
      offered_per_s: ratePerS,
      seconds,
      run_at_lead_ms: [leadMs, leadMs + spreadMs],
      offered: load.offered,
      accepted: offered.size,
      rejected: load.rejected,
      not_sent_backpressure: load.skipped,
      /** Batch request → 201: run_at counts from the request, so this is part of the lateness budget. */
      ingest_ack: load.ingest,
      publish: {
        p50_ms: percentile(lateness, 50),
        p99_ms: percentile(lateness, 99),
        max_ms: lateness[lateness.length - 1] ?? 0,
        published_per_s: Math.round(publishedPerS),
        lost,
        early: early.count,
      },
      run_at_to_dispatched_at: {
        p50_ms: percentile(toBroker, 50),
        p99_ms: percentile(toBroker, 99),
        max_ms: toBroker[toBroker.length - 1] ?? 0,
      },
      dispatcher_run_at_to_broker_ack: await dispatcherLateness(dispatcher.metricsPort),
      stages: await stagesOf(),
      cpu_cores: cpuCores,
      cpu_us_per_task: cpuUsPerTask,
      peer: null,
    };
    await consumer.disconnect();
    log(
      `accepted ${report.accepted}/${report.offered} (rejected ${report.rejected}, not sent ${report.not_sent_backpressure}); ` +
        `published ${lateness.length} at ${report.publish.published_per_s}/s, lost ${lost}, early ${early.count}`,
    );
    log(
      `lateness run_at → consumer: p50 ${report.publish.p50_ms} ms, p99 ${report.publish.p99_ms} ms, max ${report.publish.max_ms} ms`,
    );
    log(
      `run_at → dispatched_at (in the dispatcher): p50 ${report.run_at_to_dispatched_at.p50_ms} ms, p99 ${report.run_at_to_dispatched_at.p99_ms} ms`,
    );
    log(`stages: ${JSON.stringify(report.stages)}`);
    log(`ingest (batch request → 201): p50 ${load.ingest.p50_ms} ms, p99 ${load.ingest.p99_ms} ms`);
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
