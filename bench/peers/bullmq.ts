/**
 * The end-to-end benchmark's peer: BullMQ's delayed jobs under the same
 * offered load and delays as Chronofence's run, on the same Redis under a
 * key prefix of its own (deleted afterwards), with no-op processors in
 * worker processes of their own.
 *
 * A job's due time (its run_at) is `timestamp + delay` of the job as addBulk
 * returned it (BullMQ zeroes the stored `delay` when it promotes the job).
 * The rest is read back from each job's hash after the run: `processedOn`,
 * the moment a worker moved it to active (its start), `finishedOn`, its
 * completion, `ats`, how many times it was started.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import {
  coresBetween,
  cpuTicksOf,
  cpuUsPerTask,
  deleteBenchKeys,
  type Lateness,
  latenessOf,
  offerOpenLoop,
  plateauRate,
  root,
  stopChildren,
  waitUntil,
} from "../support.js";
import { bullmqConnection } from "./bullmq-connection.js";

export interface PeerRun {
  redisUrl: string;
  ratePerS: number;
  seconds: number;
  leadMs: number;
  spreadMs: number;
  workerProcesses: number;
  concurrency: number;
}

export interface PeerReport {
  peer: "bullmq";
  version: string;
  offered: number;
  accepted: number;
  rejected: number;
  not_sent_backpressure: number;
  /** addBulk call → resolved (a Redis write, not an fsync: BullMQ's ack). */
  ingest_ack: Lateness;
  worker_start: Lateness;
  /** Completions per second while jobs fall due at the full offered rate (support.ts plateauRate). */
  completed_per_s: number | null;
  completed: number;
  /** Jobs gone from Redis, or failed (a no-op never fails on purpose). */
  lost: number;
  /** Still delayed, waiting or active when the run ended. */
  unfinished: number;
  early: number;
  /** Jobs a worker started more than once (BullMQ's `ats` > 1). */
  duplicates: number;
  worker_processes: number;
  concurrency: number;
  cpu_cores: Record<string, number>;
  cpu_us_per_task: number | null;
}

const QUEUE = "noop";
const BULLMQ_VERSION = (
  JSON.parse(readFileSync(path.join(root, "node_modules/bullmq/package.json"), "utf8")) as {
    version: string;
  }
).version;
const JOB_FIELDS = ["timestamp", "processedOn", "finishedOn", "ats", "failedReason"] as const;

function startWorker(run: PeerRun, prefix: string): Promise<ChildProcess> {
  const worker = spawn(process.execPath, [path.join(root, "dist/bench/peers/bullmq-worker.js")], {
    env: {
      ...process.env,
      BENCH_BULLMQ_REDIS_URL: run.redisUrl,
      BENCH_BULLMQ_PREFIX: prefix,
      BENCH_BULLMQ_QUEUE: QUEUE,
      BENCH_BULLMQ_CONCURRENCY: String(run.concurrency),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    worker.stdout!.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("ready")) resolve(worker);
    });
    worker.once("exit", (code) => reject(new Error(`bullmq worker exited (${code})`)));
  });
}

export async function runBullmqPeer(run: PeerRun): Promise<PeerReport> {
  const prefix = `cf-bench-bullmq-${Date.now()}`;
  const queue = new Queue(QUEUE, { connection: bullmqConnection(run.redisUrl), prefix });
  const workers: ChildProcess[] = [];
  try {
    for (let i = 0; i < run.workerProcesses; i++) workers.push(await startWorker(run, prefix));
    const pids: Record<string, number> = { bench: process.pid };
    workers.forEach((w, i) => {
      pids[`bullmq_worker_${i}`] = w.pid!;
    });
    const cpuBefore = await cpuTicksOf(pids);
    const cpuStartMs = Date.now();

    /** Job id → due time. */
    const accepted = new Map<string, number>();
    let lastDueMs = 0;
    let rejected = 0;
    const ackMs: number[] = [];
    const load = await offerOpenLoop({
      ratePerS: run.ratePerS,
      seconds: run.seconds,
      tickMs: 10,
      maxChunk: 1000,
      maxInFlight: 32,
      async send(count) {
        const sentMs = Date.now();
        const jobs = Array.from({ length: count }, (_, i) => ({
          name: QUEUE,
          data: { i },
          opts: { delay: Math.round(run.leadMs + Math.random() * run.spreadMs) },
        }));
        try {
          for (const job of await queue.addBulk(jobs)) {
            accepted.set(job.id!, job.timestamp + job.delay);
            lastDueMs = Math.max(lastDueMs, job.timestamp + job.delay);
          }
          ackMs.push(Date.now() - sentMs);
        } catch {
          rejected += count;
        }
      },
    });
    await waitUntil(
      async () => (await queue.getCompletedCount()) >= accepted.size,
      lastDueMs + 15_000,
    );
    const cpuAfter = await cpuTicksOf(pids);
    const cpuCores = coresBetween(cpuBefore, cpuAfter, (Date.now() - cpuStartMs) / 1000);
    const outcome = await readOutcome(run.redisUrl, prefix, accepted);
    const completedPerS = plateauRate({ ...run, startMs: load.startMs }, outcome.finishedMs);
    return {
      peer: "bullmq",
      version: BULLMQ_VERSION,
      offered: load.offered,
      accepted: accepted.size,
      rejected,
      not_sent_backpressure: load.notSent,
      ingest_ack: latenessOf(ackMs),
      worker_start: outcome.workerStart,
      completed_per_s: completedPerS,
      completed: outcome.completed,
      lost: outcome.lost,
      unfinished: outcome.unfinished,
      early: outcome.early,
      duplicates: outcome.duplicates,
      worker_processes: run.workerProcesses,
      concurrency: run.concurrency,
      cpu_cores: cpuCores,
      // BullMQ is served by Redis and its workers alone.
      cpu_us_per_task: cpuUsPerTask(
        cpuBefore,
        cpuAfter,
        outcome.completed,
        (group) => group === "redis" || group.startsWith("bullmq_worker"),
      ),
    };
  } finally {
    await stopChildren(workers);
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    await deleteBenchKeys(prefix);
  }
}

/** Reads every accepted job's hash back (pipelined) and measures from BullMQ's own timestamps. */
async function readOutcome(redisUrl: string, prefix: string, accepted: Map<string, number>) {
  const ids = [...accepted.keys()];
  const redis = new Redis(redisUrl);
  try {
    const starts: number[] = [];
    let lost = 0;
    let unfinished = 0;
    let early = 0;
    let duplicates = 0;
    const finishedMs: number[] = [];
    for (let from = 0; from < ids.length; from += 5000) {
      const pipeline = redis.pipeline();
      for (const id of ids.slice(from, from + 5000)) {
        pipeline.hmget(`${prefix}:${QUEUE}:${id}`, ...JOB_FIELDS);
      }
      const replies = (await pipeline.exec()) ?? [];
      for (const [index, [error, fields]] of replies.entries()) {
        if (error) throw error;
        const [timestamp, processedOn, finishedOn, ats, failedReason] = fields as Array<
          string | null
        >;
        if (timestamp === null || failedReason != null) {
          lost++;
          continue;
        }
        if (finishedOn == null || processedOn == null) {
          unfinished++;
          continue;
        }
        const dueMs = accepted.get(ids[from + index]!)!;
        starts.push(Number(processedOn) - dueMs);
        if (Number(processedOn) < dueMs) early++;
        if (Number(ats) > 1) duplicates++;
        finishedMs.push(Number(finishedOn));
      }
    }
    return {
      workerStart: latenessOf(starts),
      completed: starts.length,
      finishedMs,
      lost,
      unfinished,
      early,
      duplicates,
    };
  } finally {
    redis.disconnect();
  }
}
