/**
 * bench:e2e's `--embedded` run: the same offered load through
 * `chronofence dev` on the embedded default — one process running every
 * role, PGlite as its Postgres, the in-process hot tier and transport — in
 * a fresh data directory. The task rows are read after the run from its
 * PGlite (once dev has stopped: one process at a time opens it), so the
 * figures are those of e2e.ts, computed by the same code (e2e-outcome.ts).
 * There is no Kafka to listen to: `publish` and `run_at → dispatched_at`
 * are not measured.
 */
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { openEmbeddedPostgres } from "../node/src/adapters/pglite/embedded-postgres.js";
import { counterOf, executionOutcome, readTasks } from "./e2e-outcome.js";
import {
  coresBetween,
  cpuTicksOf,
  cpuUsPerTask,
  maxOf,
  offerThroughApi,
  roleNodeArgs,
  root,
  waitUntil,
} from "./support.js";

export interface EmbeddedRun {
  ratePerS: number;
  seconds: number;
  leadMs: number;
  spreadMs: number;
  drainMs: number;
  port: number;
  metricsPort: number;
  /** The worker's settings (concurrency), as the services run has them. */
  workerEnv: Record<string, string>;
}

export async function runEmbedded(run: EmbeddedRun) {
  const dataDir = await mkdtemp(path.join(tmpdir(), "chronofence-bench-dev-"));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "error",
    CF_WORKER_METRICS_PORT: String(run.metricsPort),
    ...run.workerEnv,
  };
  // Unset, so that each part is the embedded one.
  for (const name of ["DATABASE_URL", "REDIS_URL", "KAFKA_BROKERS"]) delete env[name];
  const cli = path.join(root, "bin/chronofence.js");
  const dev = spawn(
    process.execPath,
    [...roleNodeArgs(), cli, "dev", "--data-dir", dataDir, "--port", String(run.port)],
    { env, stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = new Promise<number | null>((resolve) => dev.once("exit", resolve));
  try {
    const apiUrl = await readyUrl(dev.stdout!, exited);
    const { api_key: apiKey } = JSON.parse(await readFile(path.join(dataDir, "dev.json"), "utf8"));
    const pids = { dev: dev.pid!, bench: process.pid };
    const cpuBefore = await cpuTicksOf(pids);
    const cpuStartMs = Date.now();
    const accepted = new Map<string, number>();
    const load = await offerThroughApi(
      { baseUrl: apiUrl, apiKey, taskType: "noop", ...run },
      accepted,
    );
    const completed = () =>
      counterOf(run.metricsPort, "cf_worker_outcomes_total", 'outcome="completed"');
    await waitUntil(
      async () => (await completed()) >= accepted.size,
      maxOf(accepted.values()) + run.drainMs,
      1000,
    );
    const cpuAfter = await cpuTicksOf(pids);
    const cpuCores = coresBetween(cpuBefore, cpuAfter, (Date.now() - cpuStartMs) / 1000);
    const fencedRejections = await counterOf(run.metricsPort, "cf_worker_stale_token_total");
    dev.kill("SIGTERM");
    await exited;
    const postgres = await openEmbeddedPostgres(path.join(dataDir, "pgdata"), () => undefined);
    const rows = await readTasks(postgres.pool(null)).finally(() => postgres.close());
    const execution = executionOutcome(
      { startMs: load.startMs, seconds: run.seconds, leadMs: run.leadMs, spreadMs: run.spreadMs },
      accepted,
      rows,
    );
    return {
      offered: load.offered,
      accepted: accepted.size,
      rejected: load.rejected,
      not_sent_backpressure: load.notSent,
      ingest_ack: load.ingest,
      publish: null,
      run_at_to_dispatched_at: null,
      worker_start: execution.workerStart,
      completed: execution.completed,
      completed_per_s: execution.completedPerS,
      lost: execution.lost,
      unfinished: execution.unfinished,
      not_completed_by_status: execution.notCompleted,
      early: execution.early,
      duplicates: execution.duplicates,
      fenced_rejections: fencedRejections,
      worker_processes: 1,
      cpu_cores: cpuCores,
      // One process serves it all (its PGlite runs on a thread of it).
      cpu_us_per_task: cpuUsPerTask(cpuBefore, cpuAfter, execution.completed, (g) => g === "dev"),
    };
  } finally {
    if (dev.exitCode === null) {
      dev.kill("SIGKILL");
      await exited;
    }
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** The URL of dev's `ready <url>` line; rejects if it exits first. */
function readyUrl(stdout: NodeJS.ReadableStream, exited: Promise<number | null>): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = /^ready (\S+)$/m.exec(out);
      if (match) resolve(match[1]!);
    });
    void exited.then((code) => reject(new Error(`chronofence dev exited (${code}) before ready`)));
  });
}
