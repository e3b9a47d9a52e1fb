/**
 * DAG benchmark: a layered workflow of 10,000 nodes (by default 50 levels of
 * 200 nodes, each depending on 3 random nodes of the level above).
 *
 *  1. Submission: POST /v1/workflows of the whole DAG to the API (a child
 *     `chronofence run --roles api`), `--submissions` times; the time until
 *     its 201 (validation, one commit of 10,000 tasks, nodes and edges).
 *  2. Release walk: workers do not exist in this branch, so the benchmark
 *     plays them in SQL: level by level, each node of the level is moved to
 *     COMPLETED in its own transaction which calls releaseDependents before
 *     COMMIT (as the execution store's fenced completion will), from
 *     `--concurrency` connections at once. Per level: the wall time from the
 *     level's first completion to the commit of its last, after which the
 *     whole next level is released (the per-level release latency); per
 *     completion: the transaction's latency and the releaser call's own.
 *     The end-to-end figure (submission to the last node's completion
 *     through real workers) needs the worker role and comes after the merge.
 *
 *   npm run bench:dag -- [--json] [--levels 50] [--width 200] [--parents 3]
 *     [--concurrency 8] [--submissions 3]
 * Uses its own database (chronofence_bench_dag) and Redis prefix; the API
 * runs with a 60 s statement timeout (see startApi).
 *
 * End-to-end mode (`--e2e`): the API, the dispatch roles
 * (dispatcher,preloader,reconciler) and one worker run as child processes
 * (as bench:e2e starts them, with their own topic prefix), one layered DAG of
 * `noop` nodes (same shape flags) is submitted once, and GET
 * /v1/workflows/{id} is polled every --poll-ms until the workflow is terminal
 * or --deadline-s passes. Reported, from Postgres after the run:
 *  - submission → last completion: the last tasks.completed_at minus the
 *    instant the POST was sent (and the POST's own 201 time);
 *  - per node with parents, against the latest completed_at of its parents:
 *    release = tasks.run_at (the release sets it to its own now(), these
 *    nodes have no delay; it runs in the last parent's completion
 *    transaction with the same now(), so it is 0 by construction and only
 *    checks that) and start = tasks.started_at (release commit + dispatch +
 *    worker pick-up: the per-level release latency a user sees);
 *    p50/p99/max over all such nodes and per level;
 *  - nodes completed, and the workflow's final status.
 *
 *   npm run bench:dag -- --e2e [--json] [--levels 50] [--width 200]
 *     [--parents 3] [--deadline-s 360] [--poll-ms 2000]
 */
import { type ChildProcess, spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { releaseDependents } from "../node/src/adapters/pg/workflow-release.js";
import { TOPICS } from "../node/src/domain/envelope.js";
import { benchArgs } from "./args.js";
import {
  deleteBenchKeys,
  deleteKafkaRun,
  maxOf,
  prepareBenchDatabase,
  readyMetricsPort,
  root,
  sleepMs,
  spawnRoles,
  stopChildren,
  waitForApi,
} from "./support.js";

const { values: args } = benchArgs({
  options: {
    json: { type: "boolean", default: false },
    levels: { type: "string", default: "50" },
    width: { type: "string", default: "200" },
    parents: { type: "string", default: "3" },
    concurrency: { type: "string", default: "8" },
    submissions: { type: "string", default: "3" },
    port: { type: "string", default: "18097" },
    e2e: { type: "boolean", default: false },
    "deadline-s": { type: "string", default: "360" },
    "poll-ms": { type: "string", default: "2000" },
  },
});

const DATABASE_URL =
  process.env.DAG_BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/chronofence_bench_dag";
const REDIS_PREFIX = "cf-bench-dag";
const levels = Number(args.levels);
const width = Number(args.width);
const parentsPerNode = Number(args.parents);
const concurrency = Number(args.concurrency);
const baseUrl = `http://127.0.0.1:${args.port}`;

/** A small seeded PRNG (mulberry32): the same DAG every run. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const keyOf = (level: number, i: number) => `l${level}n${i}`;

function layeredDag(type = "bench.noop"): { nodes: unknown[] } {
  const random = prng(42);
  const nodes: unknown[] = [];
  for (let level = 0; level < levels; level++) {
    for (let i = 0; i < width; i++) {
      const parents = new Set<string>();
      while (level > 0 && parents.size < Math.min(parentsPerNode, width)) {
        parents.add(keyOf(level - 1, Math.floor(random() * width)));
      }
      nodes.push({
        key: keyOf(level, i),
        type,
        payload: { level, i },
        depends_on: [...parents],
      });
    }
  }
  return { nodes };
}

const quantile = (sorted: readonly number[], q: number): number =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const round = (ms: number) => Math.round(ms * 100) / 100;
const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    p50_ms: round(quantile(sorted, 0.5)),
    p99_ms: round(quantile(sorted, 0.99)),
    max_ms: round(sorted.at(-1) ?? 0),
  };
};

function startApi(): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [path.join(root, "bin/chronofence.js"), "run", "--roles", "api"],
    {
      env: {
        ...process.env,
        DATABASE_URL,
        PORT: String(args.port),
        HOST: "127.0.0.1",
        CF_REDIS_PREFIX: REDIS_PREFIX,
        // One 10,000-node insert can outlast the 5 s default on a busy machine (answered 503).
        CF_PG_STATEMENT_TIMEOUT_MS: "60000",
        CF_REQUEST_TIMEOUT_MS: "120000",
        LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "inherit", "inherit"],
    },
  );
  return waitForApi(child, baseUrl, 100);
}

async function submit(apiKey: string, body: string): Promise<{ id: string; ms: number }> {
  const startMs = performance.now();
  const res = await fetch(`${baseUrl}/v1/workflows`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body,
  });
  const ms = performance.now() - startMs;
  const answer = (await res.json()) as { id: string };
  if (res.status !== 201)
    throw new Error(`submission failed: ${res.status} ${JSON.stringify(answer)}`);
  return { id: answer.id, ms };
}

interface Walk {
  level_ms: ReturnType<typeof stats> & { levels: number; first_ms: number; last_ms: number };
  completion_tx: ReturnType<typeof stats>;
  release_call: ReturnType<typeof stats>;
  total_s: number;
  completions_per_s: number;
  final_status: string;
}

/** Completes every node level by level, each in its own transaction with its release. */
async function walk(workflowId: string): Promise<Walk> {
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: concurrency });
  try {
    const nodes = await pool.query(
      `SELECT task_id, node_key, (extract(epoch FROM task_run_at) * 1000)::float8 AS run_at_ms
         FROM workflow_nodes WHERE workflow_id = $1`,
      [workflowId],
    );
    const byLevel: Array<Array<{ taskId: string }>> = Array.from({ length: levels }, () => []);
    const runAtOf = new Map<string, number>();
    for (const row of nodes.rows) {
      byLevel[Number(/^l(\d+)/.exec(row.node_key)![1])]!.push({ taskId: row.task_id });
      runAtOf.set(row.task_id, Math.round(row.run_at_ms));
    }
    const txMs: number[] = [];
    const releaseMs: number[] = [];
    const levelMs: number[] = [];
    const walkStart = performance.now();
    for (const level of byLevel) {
      const levelStart = performance.now();
      let next = 0;
      const worker = async () => {
        const client = await pool.connect();
        try {
          while (next < level.length) {
            const { taskId } = level[next++]!;
            const txStart = performance.now();
            await client.query("BEGIN");
            const runAt = new Date(runAtOf.get(taskId)!).toISOString();
            const moved = await client.query(
              `UPDATE tasks SET status = 'COMPLETED', completed_at = now(), updated_at = now(),
                      result = '{"ok":true}' WHERE id = $1 AND run_at = $2 AND status = 'SCHEDULED'`,
              [taskId, runAt],
            );
            if (moved.rowCount !== 1) throw new Error(`node ${taskId} was not released`);
            const releaseStart = performance.now();
            const outcome = await releaseDependents(
              client,
              { taskId, runAtMs: runAtOf.get(taskId)! },
              Date.now(),
            );
            releaseMs.push(performance.now() - releaseStart);
            await client.query("COMMIT");
            txMs.push(performance.now() - txStart);
            for (const entry of outcome.released) runAtOf.set(entry.taskId, entry.runAtMs);
          }
        } finally {
          client.release();
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      levelMs.push(performance.now() - levelStart);
    }
    const totalMs = performance.now() - walkStart;
    const final = await pool.query("SELECT status FROM workflows WHERE id = $1", [workflowId]);
    return {
      level_ms: {
        ...stats(levelMs),
        levels: levelMs.length,
        first_ms: round(levelMs[0]!),
        last_ms: round(levelMs.at(-1)!),
      },
      completion_tx: stats(txMs),
      release_call: stats(releaseMs),
      total_s: round(totalMs / 1000),
      completions_per_s: Math.round((txMs.length * 1000) / totalMs),
      final_status: final.rows[0].status,
    };
  } finally {
    await pool.end();
  }
}

async function main(): Promise<void> {
  const loadBefore = loadAverage();
  const { apiKey } = await prepareBenchDatabase(DATABASE_URL, [
    "tasks",
    "idempotency_keys",
    "audit_log",
    "workflow_edges",
    "workflow_nodes",
    "workflows",
  ]);
  const dag = layeredDag();
  const body = JSON.stringify(dag);
  const api = await startApi();
  try {
    await submit(apiKey, JSON.stringify({ nodes: dag.nodes.slice(0, width) })); // warm-up
    const submissions: number[] = [];
    let firstId = "";
    for (let i = 0; i < Number(args.submissions); i++) {
      const { id, ms } = await submit(apiKey, body);
      submissions.push(ms);
      firstId ||= id;
    }
    const walked = await walk(firstId);
    const report = {
      ...reportHeader("dag", loadBefore, dag.nodes.length, body.length),
      submission: { runs: submissions.length, ...stats(submissions) },
      release_walk: { concurrency, ...walked },
    };
    printSummary(report);
    if (args.json) console.log(JSON.stringify(report));
  } finally {
    api.kill("SIGTERM");
    await deleteBenchKeys(REDIS_PREFIX);
  }
}

function printSummary(r: {
  dag: {
    nodes: number;
    levels: number;
    width: number;
    parents_per_node: number;
    body_bytes: number;
  };
  submission: { runs: number; p50_ms: number; max_ms: number };
  release_walk: Walk & { concurrency: number };
  load_average_before: number[];
}): void {
  const w = r.release_walk;
  console.log(
    `DAG: ${r.dag.nodes} nodes, ${r.dag.levels} levels of ${r.dag.width}, ${r.dag.parents_per_node} parents each (${(r.dag.body_bytes / 1e6).toFixed(1)} MB body); load average before ${r.load_average_before.join(" ")}`,
  );
  console.log(
    `submission (POST /v1/workflows → 201), ${r.submission.runs} runs: median ${r.submission.p50_ms} ms, max ${r.submission.max_ms} ms`,
  );
  console.log(`release walk, ${w.concurrency} connections completing nodes, one transaction each:`);
  console.log(
    `  per level (${w.level_ms.levels} levels): p50 ${w.level_ms.p50_ms} ms, p99 ${w.level_ms.p99_ms} ms, max ${w.level_ms.max_ms} ms`,
  );
  console.log(
    `  per completion transaction: p50 ${w.completion_tx.p50_ms} ms, p99 ${w.completion_tx.p99_ms} ms, max ${w.completion_tx.max_ms} ms`,
  );
  console.log(
    `  releaseDependents call: p50 ${w.release_call.p50_ms} ms, p99 ${w.release_call.p99_ms} ms, max ${w.release_call.max_ms} ms`,
  );
  console.log(
    `  total ${w.total_s} s, ${w.completions_per_s} completions/s; workflow ended ${w.final_status}`,
  );
}

// ---- End-to-end mode (--e2e) ----

const BROKERS = (process.env.KAFKA_BROKERS ?? "127.0.0.1:9092").split(",");
const TOPIC_PREFIX = `bench-dag-${Date.now()}.`;
/** The worker role's consumer groups (adapters/kafka/kafka-task-consumer.ts), deleted after the run. */
const WORKER_GROUPS = TOPICS.map((kind) => `${TOPIC_PREFIX}chronofence-workers.${kind}`);

const e2eChild = (roles: string, env: Record<string, string> = {}): ChildProcess =>
  spawnRoles(roles, {
    DATABASE_URL,
    REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
    KAFKA_BROKERS: BROKERS.join(","),
    CF_REDIS_PREFIX: REDIS_PREFIX,
    CF_TOPIC_PREFIX: TOPIC_PREFIX,
    CF_METRICS_PORT: "0",
    CF_WORKER_METRICS_PORT: "0",
    CF_PG_STATEMENT_TIMEOUT_MS: "60000",
    CF_REQUEST_TIMEOUT_MS: "120000",
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "error",
    ...env,
  });

interface NodeRow {
  node_key: string;
  status: string;
  run_at_ms: number;
  started_at_ms: number | null;
  completed_at_ms: number | null;
  parents_done_ms: number | null;
}

/** Every node of the workflow with its task's times and its parents' latest completion. */
async function readNodes(db: pg.Client, workflowId: string): Promise<NodeRow[]> {
  const result = await db.query(
    `WITH t AS (
       SELECT n.task_id, n.node_key, ts.status, ts.run_at, ts.started_at, ts.completed_at
         FROM workflow_nodes n JOIN tasks ts ON ts.id = n.task_id
        WHERE n.workflow_id = $1 AND ts.workflow_id = $1),
     p AS (
       SELECT e.child_task_id, max(pt.completed_at) AS parents_done
         FROM workflow_edges e JOIN t pt ON pt.task_id = e.parent_task_id
        WHERE e.workflow_id = $1 GROUP BY e.child_task_id)
     SELECT t.node_key, t.status,
            extract(epoch FROM t.run_at) * 1000 AS run_at_ms,
            extract(epoch FROM t.started_at) * 1000 AS started_at_ms,
            extract(epoch FROM t.completed_at) * 1000 AS completed_at_ms,
            extract(epoch FROM p.parents_done) * 1000 AS parents_done_ms
       FROM t LEFT JOIN p ON p.child_task_id = t.task_id`,
    [workflowId],
  );
  const num = (v: unknown) => (v === null ? null : Number(v));
  return result.rows.map((r) => ({
    node_key: r.node_key,
    status: r.status,
    run_at_ms: Number(r.run_at_ms),
    started_at_ms: num(r.started_at_ms),
    completed_at_ms: num(r.completed_at_ms),
    parents_done_ms: num(r.parents_done_ms),
  }));
}

function releaseLatencies(rows: readonly NodeRow[]) {
  const release: number[] = [];
  const start: number[] = [];
  const perLevel = new Map<number, { release: number[]; start: number[] }>();
  for (const row of rows) {
    if (row.parents_done_ms === null) continue; // a root, or a parent not completed
    const level = Number(/^l(\d+)/.exec(row.node_key)![1]);
    const bucket = perLevel.get(level) ?? { release: [], start: [] };
    perLevel.set(level, bucket);
    release.push(row.run_at_ms - row.parents_done_ms);
    bucket.release.push(row.run_at_ms - row.parents_done_ms);
    if (row.started_at_ms !== null) {
      start.push(row.started_at_ms - row.parents_done_ms);
      bucket.start.push(row.started_at_ms - row.parents_done_ms);
    }
  }
  const levelsOut = [...perLevel.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([level, b]) => ({
      level,
      nodes: b.start.length,
      release: stats(b.release),
      start: stats(b.start),
    }));
  return { release: stats(release), start: stats(start), per_level: levelsOut };
}

async function mainE2e(): Promise<void> {
  const loadBefore = loadAverage();
  const deadlineS = Number(args["deadline-s"]);
  const pollMs = Number(args["poll-ms"]);
  const { apiKey } = await prepareBenchDatabase(DATABASE_URL, [
    "tasks",
    "idempotency_keys",
    "audit_log",
    "leases",
    "workflow_edges",
    "workflow_nodes",
    "workflows",
  ]);
  const dag = layeredDag("noop");
  const body = JSON.stringify(dag);
  const children: ChildProcess[] = [];
  const db = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
  try {
    const api = e2eChild("api", { PORT: String(args.port) });
    children.push(api);
    await waitForApi(api, baseUrl, 300);
    const dispatcher = e2eChild("dispatcher,preloader,reconciler");
    children.push(dispatcher);
    await readyMetricsPort(dispatcher, "dispatcher");
    const worker = e2eChild("worker");
    children.push(worker);
    await readyMetricsPort(worker, "worker");
    if (!args.json) console.log(`roles ready; submitting ${dag.nodes.length} nodes`);

    const submittedMs = Date.now();
    const { id, ms: submitMs } = await submit(apiKey, body);
    const deadlineMs = submittedMs + deadlineS * 1000;
    let status = "RUNNING";
    let pending = dag.nodes.length;
    let timedOut = false;
    for (;;) {
      const res = await fetch(`${baseUrl}/v1/workflows/${id}`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      if (res.ok) {
        const view = (await res.json()) as {
          status: string;
          pending_nodes: number;
          finished_at: string | null;
        };
        status = view.status;
        pending = view.pending_nodes;
        if (view.finished_at !== null) break;
      } else await res.text();
      if (Date.now() >= deadlineMs) {
        timedOut = true;
        break;
      }
      if (!args.json)
        console.log(
          `  ${Math.round((Date.now() - submittedMs) / 1000)} s: ${status}, ${pending} pending`,
        );
      await sleepMs(pollMs);
    }
    const rows = await readNodes(db, id);
    const completed = rows.filter((r) => r.status === "COMPLETED");
    const lastCompletionMs = maxOf(completed.map((r) => r.completed_at_ms!));
    const byStatus: Record<string, number> = {};
    for (const r of rows) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
    const report = {
      ...reportHeader("dag-e2e", loadBefore, dag.nodes.length, body.length),
      submission_ms: round(submitMs),
      submission_to_last_completion_s:
        completed.length === 0 ? null : round((lastCompletionMs - submittedMs) / 1000),
      workflow_status: status,
      timed_out: timedOut,
      deadline_s: deadlineS,
      nodes_completed: completed.length,
      nodes_by_status: byStatus,
      ...releaseLatencies(rows),
    };
    if (!args.json) {
      console.log(
        `DAG e2e: ${report.dag.nodes} noop nodes, ${levels} levels of ${width}, ${parentsPerNode} parents each; load average before ${loadBefore.join(" ")}, after ${report.load_average_after.join(" ")}`,
      );
      console.log(
        `  submission (POST → 201) ${report.submission_ms} ms; submission → last completion ${report.submission_to_last_completion_s} s; workflow ${status}${timedOut ? ` (deadline ${deadlineS} s passed)` : ""}; completed ${completed.length}/${rows.length} ${JSON.stringify(byStatus)}`,
      );
      const line = (s: ReturnType<typeof stats>) =>
        `p50 ${s.p50_ms} ms, p99 ${s.p99_ms} ms, max ${s.max_ms} ms`;
      console.log(`  release (run_at − parents' last completed_at): ${line(report.release)}`);
      console.log(`  start (started_at − parents' last completed_at): ${line(report.start)}`);
      for (const l of report.per_level)
        console.log(`    level ${l.level} (${l.nodes}): start ${line(l.start)}`);
    }
    if (args.json) console.log(JSON.stringify(report));
  } finally {
    await stopChildren(children);
    await db.end();
    await deleteKafkaRun(BROKERS, TOPIC_PREFIX, WORKER_GROUPS);
    await deleteBenchKeys(REDIS_PREFIX);
  }
}

(args.e2e ? mainE2e() : main()).then(
  () => {
    if (args.e2e) process.exit(process.exitCode ?? 0);
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
    if (args.e2e) process.exit(1);
  },
);

function loadAverage(): number[] {
  return os.loadavg().map((l) => Math.round(l * 100) / 100);
}

/** What every dag report starts with: the machine, its load, and the DAG's shape. */
function reportHeader(benchmark: string, loadBefore: number[], nodes: number, bodyBytes: number) {
  return {
    benchmark,
    node: process.version,
    cpus: `${os.cpus().length} x ${os.cpus()[0]?.model ?? "?"}`,
    load_average_before: loadBefore,
    load_average_after: loadAverage(),
    dag: { nodes, levels, width, parents_per_node: parentsPerNode, body_bytes: bodyBytes },
  };
}
