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
 */
import { type ChildProcess, spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { releaseDependents } from "../node/src/adapters/pg/workflow-release.js";
import { deleteBenchKeys, prepareBenchDatabase, root, waitForApi } from "./support.js";

const { values: args } = parseArgs({
  options: {
    json: { type: "boolean", default: false },
    levels: { type: "string", default: "50" },
    width: { type: "string", default: "200" },
    parents: { type: "string", default: "3" },
    concurrency: { type: "string", default: "8" },
    submissions: { type: "string", default: "3" },
    port: { type: "string", default: "18097" },
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

function layeredDag(): { nodes: unknown[] } {
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
        type: "bench.noop",
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
  const loadBefore = os.loadavg().map((l) => Math.round(l * 100) / 100);
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
      benchmark: "dag",
      node: process.version,
      cpus: `${os.cpus().length} x ${os.cpus()[0]?.model ?? "?"}`,
      load_average_before: loadBefore,
      load_average_after: os.loadavg().map((l) => Math.round(l * 100) / 100),
      dag: {
        nodes: dag.nodes.length,
        levels,
        width,
        parents_per_node: parentsPerNode,
        body_bytes: body.length,
      },
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

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
