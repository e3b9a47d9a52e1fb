/**
 * What the benchmarks share: the repository root, a fresh bench database
 * with a tenant that is never throttled, spawning and waiting for role
 * processes, the open-loop offered load, the Kafka arrival consumer,
 * percentiles, CPU accounting, and removing the run's Redis keys and topics.
 */
import "../node/src/adapters/kafka/kafkajs-idle-timers.js"; // before kafkajs is used: its idle timers
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { type Consumer, Kafka, logLevel } from "kafkajs";
import pg from "pg";
import { systemClock } from "../node/src/adapters/clock/system-clock.js";
import { resolveConfig } from "../node/src/config/config.js";
import { TOPICS, topicName } from "../node/src/domain/envelope.js";
import {
  createTenant,
  ensureDatabase,
  runMaintenance,
  runMigrations,
} from "../node/src/main/admin.js";
import { percentile } from "./stats.js";

/** The repository root (the benchmarks run from dist/bench/). */
/** The repository: the nearest directory up with a package.json, from dist/bench (built) or bench (a test's import of the sources). */
export const root = (() => {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "package.json"))) return dir;
    if (dir === path.dirname(dir)) throw new Error("no package.json above bench/support");
  }
})();

/**
 * Creates (if need be), migrates and partitions the bench database, empties
 * `tables` and checkpoints, then adds a tenant with limits high enough not to throttle.
 */
export async function prepareBenchDatabase(
  databaseUrl: string,
  tables: readonly string[],
): Promise<{ apiKey: string; tenantId: string }> {
  const config = resolveConfig({ ...process.env, DATABASE_URL: databaseUrl });
  await ensureDatabase(databaseUrl);
  await runMigrations(config);
  await runMaintenance(config, systemClock);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`TRUNCATE ${tables.join(", ")}`);
    // A TRUNCATE gives each of the ~400 task partitions and their indexes a new file, which
    // leaves a dead catalog row for each: ~1,600 per run. With autovacuum off (this machine's
    // Postgres, bench/RESULTS.md) they pile up, and a session's later runs read a catalog
    // several times its size (48,000 dead rows of pg_class after ~30 runs).
    await client.query("VACUUM pg_catalog.pg_class, pg_catalog.pg_attribute, pg_catalog.pg_type");
    await client.query("CHECKPOINT");
  } finally {
    await client.end();
  }
  const tenant = await createTenant(config, systemClock, `bench-${Date.now()}`, {
    ratePerS: 1e9,
    burst: 1e9,
  });
  return { apiKey: tenant.apiKey, tenantId: tenant.tenant.id };
}

/** Polls the API child's /readyz every 100 ms; kills it if it is not ready after `attempts`. */
export async function waitForApi(
  api: ChildProcess,
  baseUrl: string,
  attempts: number,
): Promise<ChildProcess> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const ok = await fetch(`${baseUrl}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return api;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  api.kill("SIGKILL");
  throw new Error("the API did not become ready");
}

/** The benchmark's hot-tier keys would otherwise pile up in Redis run after run. */
export async function deleteBenchKeys(prefix: string): Promise<void> {
  const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 100);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}

export const round = (x: number): number => Math.round(x * 100) / 100;

/** A command-line option's value as a positive number, or an error naming the option. */
export function positive(name: string, value: string | undefined): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0)
    throw new Error(`--${name} must be a positive number, not ${value}`);
  return n;
}

/**
 * The largest value, or -Infinity for none. A loop, not Math.max(...values):
 * spreading passes every value as an argument, which overflows the stack once
 * a run holds about 120,000 of them.
 */
export function maxOf(values: Iterable<number>): number {
  let max = Number.NEGATIVE_INFINITY;
  for (const value of values) if (value > max) max = value;
  return max;
}

export interface Lateness {
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

/** p50, p99 and max of `values` (sorted in place). */
export function latenessOf(values: number[]): Lateness {
  values.sort((a, b) => a - b);
  return {
    p50_ms: percentile(values, 50),
    p99_ms: percentile(values, 99),
    max_ms: values[values.length - 1] ?? 0,
  };
}

export const sleepMs = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The open-loop flags bench:dispatch and bench:e2e share (node:util parseArgs
 * options): --rate tasks/s for --seconds, each due --lead-ms + up to
 * --spread-ms after its offer, and --json.
 */
export const openLoopOptions = {
  json: { type: "boolean", default: false },
  rate: { type: "string", default: "5000" },
  seconds: { type: "string", default: "10" },
  "lead-ms": { type: "string", default: "1000" },
  "spread-ms": { type: "string", default: "2000" },
} as const;

export interface OpenLoop {
  ratePerS: number;
  seconds: number;
  /** How often the loop wakes to offer what the rate says is due. */
  tickMs: number;
  /** Most tasks in one request. */
  maxChunk: number;
  /** Beyond this many unanswered requests, due tasks are counted as not sent. */
  maxInFlight: number;
  /** Sends `count` tasks in one request; settles when the answer is in. */
  send(count: number): Promise<void>;
}

/**
 * Open loop: every tick, offers what the rate says is due, whatever the
 * answers' latency (a slow system does not slow the offered load down; what
 * cannot be sent for back-pressure is counted instead).
 */
export async function offerOpenLoop(
  loop: OpenLoop,
): Promise<{ startMs: number; offered: number; notSent: number; elapsedS: number }> {
  const startMs = Date.now();
  let offered = 0;
  let notSent = 0;
  const pending = new Set<Promise<void>>();
  while (Date.now() - startMs < loop.seconds * 1000) {
    const due = Math.floor(((Date.now() - startMs) / 1000) * loop.ratePerS) - offered;
    for (let left = due; left > 0; left -= loop.maxChunk) {
      const count = Math.min(left, loop.maxChunk);
      if (pending.size >= loop.maxInFlight) notSent += count;
      else {
        const request: Promise<void> = loop.send(count).finally(() => pending.delete(request));
        pending.add(request);
      }
      offered += count;
    }
    await sleepMs(loop.tickMs);
  }
  await Promise.all(pending);
  return { startMs, offered, notSent, elapsedS: (Date.now() - startMs) / 1000 };
}

export interface ApiOffer {
  baseUrl: string;
  apiKey: string;
  taskType: string;
  ratePerS: number;
  seconds: number;
  leadMs: number;
  spreadMs: number;
}

/**
 * Offers tasks through `POST /v1/tasks/batch` (open loop), each due
 * lead..lead+spread ms after its request; fills `accepted` with the run_at of
 * every task answered 201.
 */
export async function offerThroughApi(offer: ApiOffer, accepted: Map<string, number>) {
  let rejected = 0;
  const ackMs: number[] = [];
  const send = async (count: number) => {
    const body = JSON.stringify({
      tasks: Array.from({ length: count }, (_, i) => ({
        type: offer.taskType,
        payload: { i },
        delay_ms: Math.round(offer.leadMs + Math.random() * offer.spreadMs),
      })),
    });
    const sentMs = Date.now();
    try {
      const response = await fetch(`${offer.baseUrl}/v1/tasks/batch`, {
        method: "POST",
        headers: { authorization: `Bearer ${offer.apiKey}`, "content-type": "application/json" },
        body,
      });
      if (response.status !== 201) {
        rejected += count;
        await response.text();
        return;
      }
      ackMs.push(Date.now() - sentMs);
      const answer = (await response.json()) as { tasks: Array<{ id: string; run_at?: string }> };
      for (const item of answer.tasks) {
        if (item.run_at) accepted.set(item.id, Date.parse(item.run_at));
      }
    } catch {
      rejected += count;
    }
  };
  const load = await offerOpenLoop({
    ratePerS: offer.ratePerS,
    seconds: offer.seconds,
    tickMs: 10,
    maxChunk: 1000,
    maxInFlight: 32,
    send,
  });
  return { ...load, rejected, ingest: latenessOf(ackMs) };
}

/**
 * Node flags for every role: BENCH_PROFILE_DIR=dir makes each write a CPU
 * profile, BENCH_HEAP_PROFILE_DIR=dir a sampling heap profile of every
 * allocation (heap-sampler.ts: where the garbage collector's work comes from),
 * and BENCH_NODE_ARGS adds V8 flags to try (space-separated; some, such as
 * --single-threaded-gc, are refused in NODE_OPTIONS).
 */
export const roleNodeArgs = (): string[] => [
  ...(process.env.BENCH_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? []),
  ...(process.env.BENCH_PROFILE_DIR
    ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`]
    : []),
  ...(process.env.BENCH_HEAP_PROFILE_DIR
    ? ["--import", fileURLToPath(new URL("./heap-sampler.js", import.meta.url))]
    : []),
];

/**
 * Spawns `chronofence run --roles <roles>` from the built tree, its stdout piped.
 * `nodeArgs` go before the script: some flags (--cpu-prof) are refused in NODE_OPTIONS.
 */
export function spawnRoles(
  roles: string,
  env: Record<string, string>,
  nodeArgs: readonly string[] = [],
): ChildProcess {
  const cli = [path.join(root, "bin/chronofence.js"), "run", "--roles", roles];
  return spawn(process.execPath, [...nodeArgs, ...cli], {
    env: { ...process.env, HOST: "127.0.0.1", LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
}

/** Resolves with the metrics port a roles process prints once ready (`metrics_port=N`). */
export function readyMetricsPort(
  child: ChildProcess,
  name: string,
  ready = /metrics_port=(\d+)/,
): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = ready.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once("exit", (code) => reject(new Error(`${name} exited (${code})`)));
  });
}

/** SIGTERM, then wait for every child to exit. */
export async function stopChildren(children: readonly ChildProcess[]): Promise<void> {
  for (const c of children) c.kill("SIGTERM");
  await Promise.all(
    children.map((c) =>
      c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once("exit", r)) : null,
    ),
  );
}

export interface Arrival {
  arrivedMs: number;
  dispatchedMs: number;
}

/**
 * A Kafka consumer (its own group) reading the four topics of `topicPrefix`
 * from the beginning: records each task's first arrival and counts messages
 * that arrived, or were dispatched, before their run_at.
 */
export async function startArrivalConsumer(
  brokers: string[],
  topicPrefix: string,
  arrivals: Map<string, Arrival>,
  early: { count: number },
): Promise<Consumer> {
  const kafka = new Kafka({ clientId: "bench-consumer", brokers, logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `${topicPrefix}bench`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({
    topics: TOPICS.map((kind) => topicName(topicPrefix, kind)),
    fromBeginning: true,
  });
  const joined = new Promise<void>((resolve) =>
    consumer.on(consumer.events.GROUP_JOIN, () => resolve()),
  );
  await consumer.run({
    // The group is deleted after the run and never resumes: committing its offsets would only
    // add a broker request per fetched batch (about 120 a second at 1,000 tasks/s), which the
    // benchmark counts in the broker's CPU, Chronofence's.
    autoCommit: false,
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

/** Deletes the run's topics and consumer groups. */
export async function deleteKafkaRun(
  brokers: string[],
  topicPrefix: string,
  groups: string[],
): Promise<void> {
  const kafka = new Kafka({ clientId: "bench-admin", brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin
    .deleteTopics({ topics: TOPICS.map((k) => topicName(topicPrefix, k)) })
    .catch(() => undefined);
  await admin.deleteGroups(groups).catch(() => undefined);
  await admin.disconnect();
}

/** CPU ticks (1/100 s) per live process with its group, and the machine's busy ticks. */
export interface CpuSnapshot {
  byPid: Map<string, { group: string; ticks: number }>;
  machine: number;
}

/**
 * Reads the CPU ticks of every process, grouped: the named processes, all
 * Postgres, Kafka (java) and Redis processes; the rest is `other` (e.g. test
 * suites sharing the cores: reported rather than hidden).
 */
export async function cpuTicksOf(pids: Record<string, number>): Promise<CpuSnapshot> {
  const named = new Map(Object.entries(pids).map(([name, pid]) => [String(pid), name]));
  const byPid = new Map<string, { group: string; ticks: number }>();
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
    if (stat === "") continue;
    const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11] ?? 0) + Number(fields[12] ?? 0); // utime + stime
    const group =
      named.get(pid) ??
      (comm.startsWith("postgres")
        ? "postgres"
        : comm === "java"
          ? "kafka"
          : comm.startsWith("redis-server")
            ? "redis"
            : "other");
    byPid.set(pid, { group, ticks });
  }
  // cpu  user nice system idle iowait irq softirq steal: busy = all but idle and iowait.
  const cpu = (await readFile("/proc/stat", "utf8")).split("\n")[0]!.split(/\s+/).map(Number);
  const machine = cpu.slice(1, 9).reduce((a, b) => a + b, 0) - cpu[4]! - cpu[5]!;
  return { byPid, machine };
}

/**
 * Mean cores each group used between two snapshots `wallS` apart, counted
 * per process alive at the end (a process that exited meanwhile took its
 * ticks with it; they show in `other`, which is the machine's busy time not
 * accounted to any other group). Postgres and Redis serve other users of the
 * machine too: their share is theirs and ours together.
 */
export function coresBetween(
  before: CpuSnapshot,
  after: CpuSnapshot,
  wallS: number,
): Record<string, number> {
  const ticks: Record<string, number> = { postgres: 0, kafka: 0, redis: 0 };
  let accounted = 0;
  for (const [pid, { group, ticks: t }] of after.byPid) {
    if (group === "other") continue;
    const delta = Math.max(0, t - (before.byPid.get(pid)?.ticks ?? 0));
    ticks[group] = (ticks[group] ?? 0) + delta;
    accounted += delta;
  }
  const cores: Record<string, number> = {};
  for (const [group, t] of Object.entries(ticks)) cores[group] = round(t / 100 / wallS);
  cores.other = round(Math.max(0, after.machine - before.machine - accounted) / 100 / wallS);
  return cores;
}

/**
 * CPU per completed task, in µs, over the processes that serve the system
 * under test (`serves(group)`: e.g. its roles, Postgres, Redis and the
 * broker; never the load generator or `other`). Postgres, Redis and the
 * broker are counted whole: on a machine where other work uses them, theirs
 * is counted too (say the load average beside the figure).
 */
export function cpuUsPerTask(
  before: CpuSnapshot,
  after: CpuSnapshot,
  completed: number,
  serves: (group: string) => boolean,
): number | null {
  if (completed === 0) return null;
  let ticks = 0;
  for (const [pid, { group, ticks: t }] of after.byPid)
    if (serves(group)) ticks += Math.max(0, t - (before.byPid.get(pid)?.ticks ?? 0));
  return Math.round((ticks * 10_000) / completed); // a tick is 10 ms
}

/**
 * Matches accepted tasks (id → run_at) with their first Kafka arrival:
 * lateness run_at → arrival and run_at → dispatched_at, the rate of
 * arrivals, and the tasks that never arrived.
 */
export function publishOutcome(accepted: Map<string, number>, arrivals: Map<string, Arrival>) {
  const toConsumer: number[] = [];
  const toBroker: number[] = [];
  let lost = 0;
  let firstMs = Number.POSITIVE_INFINITY;
  let lastMs = 0;
  for (const [id, runAtMs] of accepted) {
    const arrival = arrivals.get(id);
    if (!arrival) {
      lost++;
      continue;
    }
    toConsumer.push(arrival.arrivedMs - runAtMs);
    toBroker.push(arrival.dispatchedMs - runAtMs);
    firstMs = Math.min(firstMs, arrival.arrivedMs);
    lastMs = Math.max(lastMs, arrival.arrivedMs);
  }
  return {
    published: toConsumer.length,
    perS: Math.round(toConsumer.length / Math.max(0.001, (lastMs - firstMs) / 1000)),
    lost,
    toConsumer: latenessOf(toConsumer),
    toBroker: latenessOf(toBroker),
  };
}

/** Polls `done` every `everyMs` until it holds or `deadlineMs` (epoch) passes. */
export async function waitUntil(
  done: () => boolean | Promise<boolean>,
  deadlineMs: number,
  everyMs = 100,
): Promise<void> {
  while (Date.now() < deadlineMs && !(await done())) await sleepMs(everyMs);
}

/**
 * Events per second inside the plateau of an open-loop run: tasks offered at
 * a constant rate from `startMs` for `seconds`, each due lead..lead+spread ms
 * after its offer, fall due at the full rate only between
 * start + lead + spread and start + seconds + lead (before and after, the
 * due rate ramps). Counting completions there measures what the system
 * sustains at the offered rate, or its capacity if a backlog built up.
 * Null when the run is shorter than the spread (no plateau).
 */
export function plateauRate(
  run: { startMs: number; seconds: number; leadMs: number; spreadMs: number },
  eventsMs: readonly number[],
): number | null {
  const fromMs = run.startMs + run.leadMs + run.spreadMs;
  const toMs = run.startMs + run.seconds * 1000 + run.leadMs;
  if (toMs <= fromMs) return null;
  let count = 0;
  for (const t of eventsMs) if (t >= fromMs && t < toMs) count++;
  return Math.round(count / ((toMs - fromMs) / 1000));
}
