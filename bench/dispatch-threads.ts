/**
 * Where should the dispatcher's 16 Wasm wheels run: on the main thread (one
 * Timers per shard, each woken by a sleeper thread: the design this bench
 * measured; the dispatcher has since run one wheel for all its shards) or one
 * worker_thread per shard (docs/architecture.md section 6, step 7)? The main thread must publish
 * to Kafka either way (one producer), so a worker per shard adds a hop each
 * way: armed tasks are posted in, fired ids are posted back out.
 *
 *   node dist/bench/dispatch-threads.js [--rate 10000] [--seconds 5] [--json]
 *
 * Offers `rate` tasks per second (envelope-sized, 16 shards, due 0.5–2.5 s
 * after they are loaded, as the claim lookahead loads them) and measures, on
 * the main thread, lateness from due time to the moment the main thread holds
 * the fired task, and the process's CPU per task (all threads). The offering
 * loop runs on the main thread too: when it is starved, fewer tasks are
 * offered, which the report shows (`offered`).
 */

import { isMainThread, parentPort, Worker } from "node:worker_threads";
import { Timers } from "../node/src/timing/timers.js";
import { workerThreadDriver } from "../node/src/timing/worker-thread-driver.js";
import { benchArgs } from "./args.js";

const SHARDS = 16;

interface Task {
  id: string;
  runAtMs: number;
  payloadJson: string;
}

if (!isMainThread) runShardWorker();
else await main();

/** One shard in its own thread: a Timers on this thread's event loop, fired ids posted back per wake. */
function runShardWorker(): void {
  const timers = new Timers();
  let fired: string[] = [];
  let flushing = false;
  parentPort!.on("message", (tasks: Task[] | null) => {
    if (tasks === null) {
      timers.close();
      parentPort!.close();
      return;
    }
    for (const task of tasks) {
      timers.at(task.runAtMs, () => {
        fired.push(task.id);
        if (flushing) return;
        flushing = true;
        queueMicrotask(() => {
          parentPort!.postMessage(fired);
          fired = [];
          flushing = false;
        });
      });
    }
  });
}

async function main(): Promise<void> {
  const { values: args } = benchArgs({
    options: {
      json: { type: "boolean", default: false },
      rate: { type: "string", default: "10000" },
      seconds: { type: "string", default: "5" },
    },
  });
  const rate = Number(args.rate);
  const seconds = Number(args.seconds);
  const results = [];
  for (const mode of ["main-thread", "worker-per-shard", "main-thread", "worker-per-shard"]) {
    results.push(await run(mode as Mode, rate, seconds));
    if (!args.json) console.log(JSON.stringify(results[results.length - 1]));
  }
  if (args.json) console.log(JSON.stringify({ bench: "dispatch-threads", rate, seconds, results }));
  process.exit(0);
}

type Mode = "main-thread" | "worker-per-shard";

async function run(mode: Mode, rate: number, seconds: number) {
  const due = new Map<string, number>();
  const lateMs: number[] = [];
  const onFired = (id: string) => {
    lateMs.push(Date.now() - due.get(id)!);
    due.delete(id);
  };
  let load: (shard: number, tasks: Task[]) => void;
  let close: () => Promise<void>;
  if (mode === "main-thread") {
    const wheels = Array.from({ length: SHARDS }, () => new Timers({ driver: workerThreadDriver }));
    load = (shard, tasks) => {
      for (const t of tasks) wheels[shard]!.at(t.runAtMs, () => onFired(t.id));
    };
    close = async () => {
      for (const w of wheels) w.close();
    };
  } else {
    const workers = Array.from({ length: SHARDS }, () => new Worker(new URL(import.meta.url)));
    for (const w of workers) {
      w.on("message", (ids: string[]) => {
        for (const id of ids) onFired(id);
      });
    }
    load = (shard, tasks) => workers[shard]!.postMessage(tasks);
    close = async () => {
      await Promise.all(workers.map((w) => w.terminate()));
    };
  }
  const cpuBefore = process.cpuUsage();
  const startMs = Date.now();
  let offered = 0;
  let seq = 0;
  // Every 100 ms (the claim interval), one batch per shard, as a claim round would load them.
  while (Date.now() - startMs < seconds * 1000) {
    const count = Math.round(rate / 10);
    const batches: Task[][] = Array.from({ length: SHARDS }, () => []);
    for (let i = 0; i < count; i++) {
      const id = `task-${seq++}`;
      const runAtMs = Date.now() + 500 + Math.random() * 2000;
      due.set(id, runAtMs);
      batches[i % SHARDS]!.push({
        id,
        runAtMs,
        payloadJson: `{"i":${i},"pad":"${"x".repeat(200)}"}`,
      });
    }
    for (let shard = 0; shard < SHARDS; shard++) load(shard, batches[shard]!);
    offered += count;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  while (due.size > 0 && Date.now() - startMs < (seconds + 5) * 1000) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const cpu = process.cpuUsage(cpuBefore);
  await close();
  lateMs.sort((a, b) => a - b);
  const pct = (p: number) => lateMs[Math.min(lateMs.length - 1, Math.ceil(p * lateMs.length) - 1)];
  return {
    mode,
    offered,
    fired: lateMs.length,
    late_ms: { p50: pct(0.5), p99: pct(0.99), max: lateMs[lateMs.length - 1] },
    cpu_us_per_task: Math.round((cpu.user + cpu.system) / Math.max(1, lateMs.length)),
  };
}
