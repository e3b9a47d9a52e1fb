/**
 * `npm run chaos:measure -- [--trials N] [--json]` (or `npm run chaos -- --measure`):
 * Chronofence's recovery objectives against Fencepost's targets, p50 and max
 * over N trials (default 5), on the chaos topology's own services with one
 * API, three dispatch nodes, two workers and a watchdog, under a probe load
 * (probe.ts: 20 tasks/s, each due 1 s after its submission).
 *
 * | objective | measured as | Fencepost target |
 * |---|---|---|
 * | leader failover, kill -9 / SIGSTOP | from the signal to a live leader lease held by another node | 30 s |
 * | shard rebalance, join / death | from starting a 4th dispatch node (or its kill -9) to every shard held by a live node, each at its fair share | 60 s |
 * | drain on SIGTERM, dispatch node / worker (2 s tasks running) | from SIGTERM to exit | 30 s |
 * | Redis flush, Kafka restart, Postgres restart → normal lateness | from the fault to the first run_at after which 5 s of probe tasks all start within max(1 s, 2 × the p99 before) (recovery.ts) | — |
 * | canary detection | from SIGSTOP of every dispatch node to the watchdog's canary alert (webhook) | — |
 * | fire-to-dispatch lag p99 | probe tasks outside the faults: handler start − run_at | 5 s |
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { targetShareOf } from "../../node/src/domain/fair-share.js";
import { HOT_SHARD_COUNT } from "../../node/src/domain/shard.js";
import { latenessOf, sleepMs } from "../support.js";
import { onCleanup, undoAll } from "./cleanup.js";
import { Probe, startAlertReceiver } from "./probe.js";
import { balanced, normalThresholdMs, type Objective, recoveryMs, summarize } from "./recovery.js";
import { leaderOf, startTopology, type Topology } from "./topology.js";

const TARGETS: Record<string, number | null> = {
  leader_failover_kill: 30_000,
  leader_failover_sigstop: 30_000,
  rebalance_node_joins: 60_000,
  rebalance_node_dies: 60_000,
  drain_dispatch_node: 30_000,
  drain_worker: 30_000,
  redis_flush_to_normal_lateness: null,
  kafka_restart_to_normal_lateness: null,
  postgres_restart_to_normal_lateness: null,
  canary_detection: null,
};

async function until(what: string, done: () => Promise<boolean>, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await done().catch(() => false))) {
    if (Date.now() > deadline) return false;
    await sleepMs(100);
  }
  return what.length > 0;
}

/**
 * Polls `find` until it answers, and returns that answer: the process it
 * saw is the one to use. Asking again could answer otherwise (H4 in
 * docs/evidence.md: a leader lease that expired between two questions).
 */
export async function seenWithin<T>(
  find: () => Promise<T | undefined>,
  timeoutMs = 120_000,
  everyMs = 100,
): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = await find().catch(() => undefined);
    if (seen !== undefined || Date.now() > deadline) return seen;
    await sleepMs(everyMs);
  }
}

const liveDispatch = (t: Topology) =>
  t
    .ofKind("dispatch")
    .filter((p) => p.alive && !p.paused)
    .map((p) => p.nodeId);

async function shardsBalanced(t: Topology): Promise<boolean> {
  const owners = await t.withDb(async (c) => {
    const { rows } = await c.query(
      "SELECT name, owner FROM leases WHERE name LIKE 'shard:%' AND expires_at > now()",
    );
    return new Map(rows.map((r) => [Number(String(r.name).slice(6)), r.owner as string]));
  });
  const live = liveDispatch(t);
  return balanced(owners, live, HOT_SHARD_COUNT, (n) => targetShareOf(n, live, HOT_SHARD_COUNT));
}

async function newLeader(t: Topology, oldNodeId: string): Promise<boolean> {
  const leader = await leaderOf(t);
  return leader !== undefined && leader.nodeId !== oldNodeId && leader.alive && !leader.paused;
}

export async function measureMain(
  trialsArg: string | undefined,
  json: boolean,
  outDir: string,
): Promise<number> {
  const trials = Number(trialsArg ?? 5);
  if (!Number.isInteger(trials) || trials < 1)
    throw new Error("--trials must be a positive integer");
  const log = (line: string) => process.stderr.write(`measure: ${line}\n`);
  const dir = await mkdtemp(path.join(os.tmpdir(), "cf-measure-"));
  onCleanup(`remove ${dir}`, () => rm(dir, { recursive: true, force: true }));
  try {
    log(`starting the topology under ${dir}`);
    const t = await startTopology({ dir, apis: 1, dispatchers: 3, workers: 2, observe: false });
    const alerts = await startAlertReceiver();
    const watchdog = t.addProcess("watchdog", 1, "watchdog");
    watchdog.setExtraEnv({
      CF_API_URL: t.apiUrls[0]!,
      CF_API_KEY: t.tenants[1]!.apiKey,
      CF_WATCHDOG_CANARY_INTERVAL_MS: "1000",
      CF_WATCHDOG_CANARY_DELAY_MS: "500",
      CF_WATCHDOG_CANARY_DEADLINE_MS: "5000",
      CF_WATCHDOG_CHECK_INTERVAL_MS: "250",
      CF_WATCHDOG_WEBHOOK_URL: alerts.url,
    });
    await watchdog.start();
    const probe = new Probe(t.apiUrls[0]!, t.tenants[0]!.apiKey, 20);
    probe.start();
    await sleepMs(15_000);
    const samples: Record<string, Array<number | null>> = Object.fromEntries(
      Object.keys(TARGETS).map((k) => [k, []]),
    );
    const faultWindows: Array<[number, number]> = [];
    const timed = async (name: string, act: () => Promise<number | null>) => {
      const startMs = Date.now();
      const ms = await act();
      faultWindows.push([startMs, Date.now()]);
      samples[name]!.push(ms);
      log(`${name}: ${ms === null ? "not recovered" : `${ms} ms`}`);
    };
    const settle = () => until("settled", () => shardsBalanced(t));
    const fourth = t.addProcess("dispatch", 1, "dispatch-4");
    const lateness = async (name: string, fault: () => Promise<void>, observeMs: number) => {
      await timed(name, async () => {
        const faultMs = Date.now();
        const before = (await probe.samples(t.execDir)).filter(
          (s) => s.dueMs >= faultMs - 20_000 && s.dueMs < faultMs,
        );
        await fault();
        await sleepMs(observeMs);
        return recoveryMs(await probe.samples(t.execDir), faultMs, normalThresholdMs(before), 5000);
      });
      await settle();
    };

    // Written after every trial too: a measurement stopped early (a deadline, a machine
    // too loaded to finish) still leaves the trials it completed.
    const writeReport = async (completed: number) => {
      const all = await probe.samples(t.execDir);
      const quiet = all.filter(
        (s) => !faultWindows.some(([a, b]) => s.dueMs >= a && s.dueMs <= b + 5000),
      );
      const lag = latenessOf(quiet.map((s) => s.latenessMs));
      const objectives = Object.entries(TARGETS).map(([name, targetMs]) =>
        summarize({ name, targetMs, samplesMs: samples[name]! } satisfies Objective),
      );
      const report = {
        trials: completed,
        started_at: new Date(probe.startedAtMs).toISOString(),
        load_average: os.loadavg().map((l) => Number(l.toFixed(2))),
        fire_to_start_lag: { ...lag, count: quiet.length, target_p99_ms: 5000 },
        objectives,
        samples,
      };
      await mkdir(outDir, { recursive: true });
      const base = path.join(outDir, `measure-${report.started_at.replace(/[:.]/g, "")}`);
      await writeFile(`${base}.json`, `${JSON.stringify(report, null, 2)}\n`);
      await writeFile(`${base}.md`, renderMeasure(report));
      log(`report (${completed} of ${trials} trials): ${base}.md`);
      return report;
    };
    for (let trial = 1; trial <= trials; trial++) {
      log(`trial ${trial} of ${trials}`);
      for (const how of ["kill", "sigstop"] as const) {
        const leader = await seenWithin(() => leaderOf(t));
        if (!leader) throw new Error("no leader within 120 s");
        await timed(`leader_failover_${how}`, async () => {
          const t0 = Date.now();
          if (how === "kill") await leader.kill9();
          else leader.pause();
          const ok = await until("new leader", () => newLeader(t, leader.nodeId));
          return ok ? Date.now() - t0 : null;
        });
        if (how === "kill") await leader.start();
        else leader.resume();
        await settle();
      }
      await timed("rebalance_node_joins", async () => {
        const t0 = Date.now();
        await fourth.start();
        return (await until("balanced", () => shardsBalanced(t))) ? Date.now() - t0 : null;
      });
      await timed("rebalance_node_dies", async () => {
        const t0 = Date.now();
        await fourth.kill9();
        return (await until("balanced", () => shardsBalanced(t))) ? Date.now() - t0 : null;
      });
      await timed("drain_dispatch_node", async () => {
        const node = t.byName("dispatch-1");
        const ms = await node.terminate();
        await node.start();
        return ms;
      });
      await settle();
      await timed("drain_worker", async () => {
        await probe.slowTasks(6, 2000);
        await sleepMs(1500);
        const worker = t.byName("worker-1");
        const ms = await worker.terminate();
        await worker.start();
        return ms;
      });
      await lateness("redis_flush_to_normal_lateness", () => t.redis.flushAll(), 20_000);
      await lateness(
        "kafka_restart_to_normal_lateness",
        async () => {
          await t.kafka.stop();
          await t.kafka.start();
        },
        30_000,
      );
      await lateness(
        "postgres_restart_to_normal_lateness",
        async () => {
          await t.postgres.stop("fast");
          await t.postgres.start();
        },
        20_000,
      );
      await timed("canary_detection", async () => {
        // A canary already late (the faults above) must clear first, or no new alert would fire.
        if (alerts.last("canary") === "firing") await alerts.next("canary", "resolved", 120_000);
        const t0 = Date.now();
        for (const p of t.ofKind("dispatch")) p.pause();
        const fired = await alerts.next("canary", "firing", 120_000);
        for (const p of t.ofKind("dispatch")) p.resume();
        await alerts.next("canary", "resolved", 120_000);
        return fired === null ? null : fired - t0;
      });
      await settle();
      if (trial < trials) await writeReport(trial);
    }
    probe.stop();
    const report = await writeReport(trials);
    process.stdout.write(json ? `${JSON.stringify(report)}\n` : renderMeasure(report));
    return 0;
  } finally {
    await undoAll();
  }
}

function renderMeasure(r: {
  trials: number;
  started_at: string;
  fire_to_start_lag: { p50_ms: number; p99_ms: number; max_ms: number; count: number };
  objectives: ReturnType<typeof summarize>[];
}): string {
  const s = (ms: number | null) => (ms === null ? "—" : `${(ms / 1000).toFixed(2)} s`);
  const lines = [
    `# Recovery objectives, ${r.trials} trial(s), from ${r.started_at}`,
    "",
    "| objective | p50 | max | not recovered | Fencepost target | met |",
    "| --- | --- | --- | --- | --- | --- |",
    ...r.objectives.map(
      (o) =>
        `| ${o.name} | ${s(o.p50_ms)} | ${s(o.max_ms)} | ${o.unrecovered} | ${s(o.target_ms)} | ${o.meets_target === null ? "—" : o.meets_target ? "yes" : "**no**"} |`,
    ),
    `| fire-to-start lag p99 (probe, outside faults; ${r.fire_to_start_lag.count} tasks) | p50 ${s(r.fire_to_start_lag.p50_ms)} | p99 ${s(r.fire_to_start_lag.p99_ms)} | | 5.00 s | ${r.fire_to_start_lag.p99_ms < 5000 ? "yes" : "**no**"} |`,
    "",
  ];
  return lines.join("\n");
}
