/**
 * Ingest benchmark: durable tasks accepted per second through the HTTP API,
 * with latency percentiles, for single-task POSTs and for batches of 100.
 *
 * By default it prepares its own database (`chronofence_bench`, migrated,
 * tables emptied), creates a tenant with limits high enough not to throttle,
 * starts `chronofence run --roles api` as a child process, drives it with
 * autocannon (closed loop: N connections, each sends as soon as it is
 * answered), checks that every 2xx is a row in Postgres, and prints the
 * Postgres durability settings beside the numbers.
 *
 *   npm run build:ts && npm run bench:ingest -- [--json] [--duration 10]
 *     [--connections 64] [--batch-connections 8] [--profile]
 * With --profile the API runs under `node --cpu-prof` and the hottest
 * functions are summarised (profiles in bench/results/).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import pg from "pg";
import { benchArgs } from "./args.js";
import { coresUsed, snapshot } from "./cpu-account.js";
import { summariseProfiles } from "./ingest-profile.js";
import { deleteBenchKeys, prepareBenchDatabase, root, waitForApi } from "./support.js";

const { values: args } = benchArgs({
  options: {
    json: { type: "boolean", default: false },
    duration: { type: "string", default: "10" },
    connections: { type: "string", default: "64" },
    "batch-connections": { type: "string", default: "8" },
    port: { type: "string", default: "18080" },
    profile: { type: "boolean", default: false },
  },
});

const DATABASE_URL =
  process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/chronofence_bench";
const REDIS_PREFIX = "cf-bench";
const durationS = Number(args.duration);
const port = Number(args.port);
const baseUrl = `http://127.0.0.1:${port}`;
const log = (line: string) => console.log(line);

interface Phase {
  tasks_per_s: number;
  requests_per_s: number;
  latency_p50_ms: number;
  latency_p99_ms: number;
  latency_max_ms: number;
  connections: number;
  tasks_acknowledged: number;
  non_2xx: number;
  errors: number;
  /** Cores each process group used during the phase (the machine has os.cpus().length). */
  cpu_cores: Record<string, number>;
  /** From the API's /metrics: how big group commits were and how long they took. */
  group_commits: { count: number; mean_rows: number; mean_ms: number };
}

/** Reads the group-commit histograms' sums and counts from the API's /metrics. */
async function commitStats(): Promise<{ count: number; rows: number; seconds: number }> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
  return {
    count: value(/^cf_group_commit_rows_count (\S+)$/m),
    rows: value(/^cf_group_commit_rows_sum (\S+)$/m),
    seconds: value(/^cf_group_commit_duration_seconds_sum\{outcome="ok"\} (\S+)$/m),
  };
}

async function prepare(): Promise<{
  apiKey: string;
  tenantId: string;
  settings: Record<string, string>;
}> {
  const tenant = await prepareBenchDatabase(DATABASE_URL, [
    "tasks",
    "idempotency_keys",
    "audit_log",
  ]);
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    const rows = await client.query(
      `SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1) ORDER BY name`,
      [
        [
          "synchronous_commit",
          "fsync",
          "wal_sync_method",
          "commit_delay",
          "commit_siblings",
          "wal_level",
          "full_page_writes",
          "shared_buffers",
          "max_wal_size",
          "wal_buffers",
          "wal_compression",
        ],
      ],
    );
    const settings: Record<string, string> = {
      server_version: (await client.query("SHOW server_version")).rows[0].server_version,
    };
    for (const r of rows.rows) settings[r.name] = r.unit ? `${r.setting} (${r.unit})` : r.setting;
    return { ...tenant, settings };
  } finally {
    await client.end();
  }
}

async function startApi(profileDir: string | null): Promise<ChildProcess> {
  const nodeArgs = profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];
  const child = spawn(
    process.execPath,
    [...nodeArgs, path.join(root, "bin/chronofence.js"), "run", "--roles", "api"],
    {
      env: {
        ...process.env,
        DATABASE_URL,
        PORT: String(port),
        HOST: "127.0.0.1",
        CF_REDIS_PREFIX: REDIS_PREFIX,
        LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "inherit", "inherit"],
    },
  );
  return waitForApi(child, baseUrl, 100);
}

async function drive(
  apiPid: number,
  apiKey: string,
  body: string,
  connections: number,
  tasksPerRequest: number,
): Promise<Phase> {
  const before = await snapshot(apiPid);
  const commitsBefore = await commitStats();
  const result = await autocannon({
    url: `${baseUrl}${tasksPerRequest === 1 ? "/v1/tasks" : "/v1/tasks/batch"}`,
    method: "POST",
    connections,
    duration: durationS,
    timeout: 30,
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body,
  });
  const cpu = coresUsed(before, await snapshot(apiPid), result.duration);
  const commitsAfter = await commitStats();
  const commits = commitsAfter.count - commitsBefore.count;
  return {
    tasks_per_s: Math.round((result["2xx"] * tasksPerRequest) / result.duration),
    requests_per_s: Math.round(result["2xx"] / result.duration),
    latency_p50_ms: result.latency.p50,
    latency_p99_ms: result.latency.p99,
    latency_max_ms: result.latency.max,
    connections,
    tasks_acknowledged: result["2xx"] * tasksPerRequest,
    non_2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    cpu_cores: cpu,
    group_commits: {
      count: commits,
      mean_rows: Math.round((commitsAfter.rows - commitsBefore.rows) / Math.max(1, commits)),
      mean_ms:
        Math.round(
          ((1000 * (commitsAfter.seconds - commitsBefore.seconds)) / Math.max(1, commits)) * 10,
        ) / 10,
    },
  };
}

const task = (i: number) => ({
  type: "bench.task",
  payload: { order: i, note: "hello" },
  delay_ms: 600_000,
});

async function main(): Promise<void> {
  const loadBefore = os.loadavg().map((l) => Math.round(l * 100) / 100);
  const { apiKey, tenantId, settings } = await prepare();
  const profileDir = args.profile
    ? path.join(root, "bench/results", `ingest-profile-${Date.now()}`)
    : null;
  if (profileDir) await mkdir(profileDir, { recursive: true });
  const api = await startApi(profileDir);
  try {
    const single = JSON.stringify(task(1));
    const batch = JSON.stringify({ tasks: Array.from({ length: 100 }, (_, i) => task(i)) });
    const pid = api.pid!;
    await drive(pid, apiKey, single, 16, 1).catch(() => undefined); // warm-up: JIT, pools, caches
    const singlePhase = await drive(pid, apiKey, single, Number(args.connections), 1);
    const batchPhase = await drive(pid, apiKey, batch, Number(args["batch-connections"]), 100);
    const stored = await countTasks(tenantId);
    const acknowledged = singlePhase.tasks_acknowledged + batchPhase.tasks_acknowledged;
    const report = {
      benchmark: "ingest",
      node: process.version,
      cpus: `${os.cpus().length} x ${os.cpus()[0]?.model ?? "?"}`,
      load_average_before: loadBefore,
      duration_s: durationS,
      single: singlePhase,
      batch: batchPhase,
      durable_check: {
        stored_after_warmup_and_runs: stored,
        acknowledged_in_runs: acknowledged,
        ok: stored >= acknowledged,
      },
      postgres: settings,
      targets: { single_tasks_per_s: 20_000, batch_tasks_per_s: 100_000, latency_p99_ms: 20 },
    };
    printSummary(report);
    if (profileDir) {
      api.kill("SIGTERM");
      await new Promise((resolve) => api.once("exit", resolve));
      log(await summariseProfiles(profileDir));
    }
    if (args.json) console.log(JSON.stringify(report));
  } finally {
    if (api.exitCode === null) api.kill("SIGTERM");
    await deleteBenchKeys(REDIS_PREFIX);
  }
}

async function countTasks(tenantId: string): Promise<number> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    return (
      await client.query("SELECT count(*)::int AS n FROM tasks WHERE tenant_id = $1", [tenantId])
    ).rows[0].n;
  } finally {
    await client.end();
  }
}

function printSummary(report: {
  single: Phase;
  batch: Phase;
  postgres: Record<string, string>;
  durable_check: { ok: boolean };
}): void {
  const line = (name: string, p: Phase) =>
    `${name.padEnd(22)} ${String(p.tasks_per_s).padStart(8)} tasks/s  ${String(p.requests_per_s).padStart(7)} req/s  ` +
    `p50 ${p.latency_p50_ms} ms  p99 ${p.latency_p99_ms} ms  max ${p.latency_max_ms} ms  ` +
    `(${p.connections} conns, non-2xx ${p.non_2xx}, errors ${p.errors})`;
  log(`ingest benchmark, ${durationS} s per phase, closed loop (autocannon) on this machine`);
  const cpu = (p: Phase) =>
    `${"".padEnd(22)} cores used: ${Object.entries(p.cpu_cores)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}\n${"".padEnd(22)} ${p.group_commits.count} group commits, mean ` +
    `${p.group_commits.mean_rows} tasks and ${p.group_commits.mean_ms} ms each`;
  log(line("single POST /v1/tasks", report.single));
  log(cpu(report.single));
  log(line("batch of 100", report.batch));
  log(cpu(report.batch));
  log(`every acknowledged task is in Postgres: ${report.durable_check.ok}`);
  log(
    `postgres: ${Object.entries(report.postgres)
      .map(([k, v]) => `${k}=${v}`)
      .join(" ")}`,
  );
  log("targets: 20000 single tasks/s, 100000 batch tasks/s, p99 < 20 ms");
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
