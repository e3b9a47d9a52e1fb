/**
 * One chaos run, start to verdict (the CLI is chaos.ts; the short run in
 * `npm test` is node/test/integration/chaos.test.ts):
 *
 *  1. its own services and the topology (topology.ts), schedules created;
 *  2. the workload (workload.ts) and the nemesis (nemesis.ts, the seed's
 *     plan) together for `minutes`;
 *  3. the nemesis stops and heals everything; once the planners have caught
 *     up, the schedules are paused; the run waits until no task is pending
 *     (at most `quiesceS`: a task still pending then is what nothing_lost
 *     reports);
 *  4. every process is stopped (SIGTERM), the history collected, one more
 *     reconciler pass run between two snapshots (collect.ts), the checker run;
 *  5. the report (report.ts) written as JSON and Markdown, the history as
 *     JSON, under `outDir`; then every process and service is stopped and the
 *     temporary directory removed (unless `keep`), also on an error.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { check } from "./checker.js";
import { onCleanup, undoAll } from "./cleanup.js";
import { ChaosClient } from "./client.js";
import { collectHistory } from "./collect.js";
import { diagnostics } from "./diagnose.js";
import { Nemesis } from "./nemesis.js";
import { type FaultKind, planFaults } from "./nemesis-plan.js";
import { Random } from "./random.js";
import { buildReport, type ChaosReport, renderMarkdown } from "./report.js";
import { Timeline } from "./timeline.js";
import { LEASE_MS, startTopology, type Topology } from "./topology.js";
import { Workload } from "./workload.js";

export interface ChaosOptions {
  minutes: number;
  seed: number;
  faults: readonly FaultKind[];
  ratePerS: number;
  quiesceS: number;
  outDir: string;
  /** Keep the run directory (process logs, handler records, Postgres data). */
  keep: boolean;
  /** Environment overrides for every Chronofence process (`--set NAME=VALUE`). */
  env?: Record<string, string>;
  log: (line: string) => void;
}

export interface ChaosResult {
  report: ChaosReport;
  files: { json: string; markdown: string; history: string };
}

const TERMINAL = "('COMPLETED', 'DEAD', 'CANCELLED', 'SKIPPED')";
const MIN_GAP_MS = 3000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `cf-chaos-${o.seed}-`));
  if (!o.keep) onCleanup(`remove ${dir}`, () => rm(dir, { recursive: true, force: true }));
  try {
    return await runIn(dir, o);
  } finally {
    await undoAll();
    if (o.keep) o.log(`kept ${dir} (logs/, executions/, pg/)`);
  }
}

async function runIn(dir: string, o: ChaosOptions): Promise<ChaosResult> {
  const random = new Random(o.seed);
  o.log(`starting Postgres, Redis, Kafka and 8 Chronofence processes under ${dir}`);
  const topology = await startTopology({ dir, ...(o.env && { env: o.env }) });
  const client = new ChaosClient(topology.apiUrls, random.fork("client"));
  const keys = topology.tenants.map((t) => t.apiKey);
  const workload = new Workload(client, random.fork("workload"), o.ratePerS, keys);
  await workload.createSchedules();
  const timeline = new Timeline(topology);
  timeline.start();

  const durationMs = Math.round(o.minutes * 60_000);
  const names = (kind: "api" | "dispatch" | "worker") => topology.ofKind(kind).map((p) => p.name);
  const plan = planFaults(random.fork("nemesis"), {
    durationMs,
    kinds: o.faults,
    processes: { api: names("api"), dispatch: names("dispatch"), worker: names("worker") },
    nodes: 3,
    leaseMs: LEASE_MS,
    warmupMs: 10_000,
    tailMs: 10_000,
    minGapMs: MIN_GAP_MS,
    maxGapMs: 8000,
  });
  o.log(`workload for ${o.minutes} min at ~${o.ratePerS}/s; ${plan.length} faults planned`);
  const nemesis = new Nemesis(topology, random.fork("nemesis-run"));
  const startedAtMs = Date.now();
  const faults = nemesis.run(plan, startedAtMs, MIN_GAP_MS);
  await workload.run(startedAtMs + durationMs);
  nemesis.stop();
  await faults;
  o.log(`workload done; healing (${nemesis.records.length} faults injected)`);
  await nemesis.healAll();
  await plannersCaughtUp(topology);
  await workload.pauseSchedules();
  const quiesced = await quiesce(topology, o.quiesceS * 1000, o.log);
  o.log(quiesced ? "quiesced; stopping every process" : "NOT quiesced; stopping every process");
  await mkdir(o.outDir, { recursive: true });
  const base = path.join(
    o.outDir,
    `chaos-seed${o.seed}-${new Date(startedAtMs).toISOString().replace(/[:.]/g, "")}`,
  );
  await writeFile(`${base}.diagnostics.txt`, await diagnostics(topology));
  await timeline.stop();
  for (const p of topology.processes) p.unsupervise();
  await Promise.all(topology.processes.map((p) => p.terminate()));

  const { history, reconcile } = await collectHistory(topology, workload);
  const verdicts = check(history);
  const record = workload.record();
  const report = buildReport({
    seed: o.seed,
    minutes: o.minutes,
    ratePerS: o.ratePerS,
    faultKinds: o.faults,
    startedAtMs,
    history,
    verdicts,
    faults: nemesis.records,
    crashes: topology.crashes,
    requests: record.requests,
    notSent: record.notSent,
    quiesced,
    reconcile,
    timeline: timeline.points,
  });
  const files = { json: `${base}.json`, markdown: `${base}.md`, history: `${base}.history.json` };
  await writeFile(files.json, `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(files.markdown, renderMarkdown(report));
  await writeFile(
    files.history,
    JSON.stringify({ ...history, requests: record.requests, schedules: record.schedules }),
  );
  return { report, files };
}

/** Until every unpaused schedule is planned past now (a planner killed or cut off has caught up). */
async function plannersCaughtUp(topology: Topology): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const ok = await topology
      .withDb(async (c) => {
        const { rows } = await c.query(
          "SELECT coalesce(bool_and(planned_through > now() + interval '2 seconds'), true) AS ok FROM schedules WHERE NOT paused",
        );
        return rows[0].ok as boolean;
      })
      .catch(() => false);
    if (ok) return;
    await sleep(500);
  }
}

/** Until no task is pending on two polls in a row, or `timeoutMs`; true if it got there. */
async function quiesce(topology: Topology, timeoutMs: number, log: (line: string) => void) {
  const deadline = Date.now() + timeoutMs;
  let quietPolls = 0;
  let lastLogMs = 0;
  while (Date.now() < deadline) {
    const pending = await topology
      .withDb(async (c) => {
        const { rows } = await c.query(
          `SELECT count(*)::int AS n FROM tasks WHERE status NOT IN ${TERMINAL}`,
        );
        return rows[0].n as number;
      })
      .catch(() => -1);
    quietPolls = pending === 0 ? quietPolls + 1 : 0;
    if (quietPolls >= 2) return true;
    if (Date.now() - lastLogMs > 10_000) {
      log(`waiting for ${pending} pending task(s)`);
      lastLogMs = Date.now();
    }
    await sleep(1000);
  }
  return false;
}
