/**
 * The DAG releaser (cf_release_dependents via releaseDependents) on real
 * Postgres, reached the way workers reach it: each node is armed by the
 * dispatcher's fenced arm, started, and ended by the worker's fenced
 * completion or failure (PgExecutionStore.complete / fail), whose transaction
 * runs the releaser before it commits (support/workflows.ts). The in-memory
 * WorkflowRun (src/domain/workflow-run.ts) is the oracle; what a step skipped
 * or cancelled is read back from the database, before and after it.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parentResults } from "../../src/adapters/pg/workflow-release.js";
import { type RunNode, WorkflowRun } from "../../src/domain/workflow-run.js";
import {
  decideTrigger,
  TRIGGER_RULES,
  type TriggerRule,
} from "../../src/domain/workflow-trigger.js";
import type { ExecutionRef } from "../../src/ports/execution-store.js";
import { propertyParams } from "../support/property.js";
import {
  finish,
  finishTask,
  type Outcome,
  pg,
  type Submitted,
  startNode,
  startWorkflowDb,
  statesOf,
  submitWorkflow,
  type WorkflowDb,
} from "./support/workflows.js";

let w: WorkflowDb;

beforeAll(async () => {
  w = await startWorkflowDb();
});

afterAll(async () => {
  await w?.stop();
});

interface NodeSpec {
  key: string;
  depends_on?: string[];
  trigger_rule?: TriggerRule;
  delay_ms?: number;
  run_at?: string;
}

const bodyOf = (nodes: NodeSpec[], failFast = false) => ({
  fail_fast: failFast,
  nodes: nodes.map((n) => ({ type: "noop", ...n })),
});

const runNodesOf = (nodes: NodeSpec[]): RunNode[] =>
  nodes.map((n) => ({
    key: n.key,
    dependsOn: n.depends_on ?? [],
    triggerRule: n.trigger_rule ?? "all_success",
  }));

/** A workflow in Postgres and its oracle, driven in lockstep. */
async function start(nodes: NodeSpec[], failFast = false) {
  const s = await submitWorkflow(w, bodyOf(nodes, failFast));
  const oracle = new WorkflowRun(runNodesOf(nodes), failFast);
  return {
    s,
    oracle,
    /** One node to its end; what its transaction released, skipped, cancelled and finished. */
    async finish(key: string, outcome: Outcome, result?: unknown, started?: ExecutionRef) {
      const before = await statesOf(w, s);
      const step = await finish(w, s.idOf.get(key)!, outcome, {
        result,
        ...(started && { started }),
      });
      const after = await statesOf(w, s);
      const moved = (to: string) =>
        Object.keys(after.nodes)
          .filter((k) => after.nodes[k] === to && before.nodes[k] !== to)
          .sort();
      const expected = oracle.finish(key, outcome);
      const released = step.released.map((e) => s.keyOf.get(e.taskId)!).sort();
      expect(released).toEqual([...expected.released].sort());
      expect(moved("SKIPPED")).toEqual([...expected.skipped].sort());
      expect(moved("CANCELLED")).toEqual([...expected.cancelled].sort());
      await expectMatches(s, oracle);
      const ended = before.workflow.status === "RUNNING" && after.workflow.status !== "RUNNING";
      return {
        released,
        skipped: moved("SKIPPED"),
        cancelled: moved("CANCELLED"),
        finished: ended ? { workflowId: s.draft.id, status: after.workflow.status } : null,
      };
    },
  };
}

async function expectMatches(s: Submitted, oracle: WorkflowRun) {
  const { nodes, workflow } = await statesOf(w, s);
  for (const [key, status] of Object.entries(nodes))
    expect([key, status]).toEqual([key, oracle.state(key)]);
  expect(workflow.status).toBe(oracle.status());
  const terminal = ["COMPLETED", "DEAD", "SKIPPED", "CANCELLED"];
  const pending = Object.values(nodes).filter((st) => !terminal.includes(st));
  expect(workflow.pending_nodes).toBe(pending.length);
  expect(workflow.finished_at === null).toBe(pending.length > 0);
}

describe("cf_trigger_decision", () => {
  it("agrees with the domain's decideTrigger on every tally of up to 4 parents", async () => {
    const rows = await w.pool.query(
      `
      SELECT r.rule, t.total, c.n AS completed, d.n AS dead, s.n AS skipped, x.n AS cancelled,
             cf_trigger_decision(r.rule, t.total, c.n, d.n, s.n, x.n) AS decision
        FROM unnest($1::text[]) AS r (rule), generate_series(0, 4) AS t (total),
             generate_series(0, 4) c (n), generate_series(0, 4) d (n),
             generate_series(0, 4) s (n), generate_series(0, 4) x (n)
       WHERE c.n + d.n + s.n + x.n <= t.total`,
      [TRIGGER_RULES],
    );
    expect(rows.rowCount).toBeGreaterThan(500);
    for (const row of rows.rows) {
      const { rule, ...tally } = row;
      expect([row, decideTrigger(rule, tally)]).toEqual([row, row.decision]);
    }
  });
});

describe("trigger rules", () => {
  const fanIn = (rule: TriggerRule): NodeSpec[] => [
    { key: "p1" },
    { key: "p2" },
    { key: "p3" },
    { key: "c", depends_on: ["p1", "p2", "p3"], trigger_rule: rule },
  ];

  it("all_success: waits for every parent, skips at the first failure", async () => {
    const ok = await start(fanIn("all_success"));
    await ok.finish("p1", "COMPLETED");
    await ok.finish("p2", "COMPLETED");
    expect((await ok.finish("p3", "COMPLETED")).released).toHaveLength(1);
    const bad = await start(fanIn("all_success"));
    expect((await bad.finish("p2", "DEAD")).skipped).toHaveLength(1);
    await bad.finish("p1", "COMPLETED");
    await bad.finish("p3", "COMPLETED");
    expect(bad.oracle.status()).toBe("FAILED");
  });

  it("all_done: runs once every parent ended, whatever the outcomes", async () => {
    const run = await start(fanIn("all_done"));
    await run.finish("p1", "DEAD");
    await run.finish("p2", "COMPLETED");
    expect((await run.finish("p3", "DEAD")).released).toHaveLength(1);
  });

  it("one_success: released as soon as one parent completed, the others still running", async () => {
    const run = await start(fanIn("one_success"));
    await run.finish("p1", "DEAD");
    expect((await run.finish("p2", "COMPLETED")).released).toHaveLength(1);
    expect((await statesOf(w, run.s)).nodes.p3).toBe("SCHEDULED");
    await run.finish("p3", "COMPLETED");
    const none = await start(fanIn("one_success"));
    await none.finish("p1", "DEAD");
    await none.finish("p2", "DEAD");
    expect((await none.finish("p3", "DEAD")).skipped).toHaveLength(1);
  });

  it("one_failed: released at the first death, skipped when all succeeded", async () => {
    const run = await start(fanIn("one_failed"));
    expect((await run.finish("p3", "DEAD")).released).toHaveLength(1);
    const none = await start(fanIn("one_failed"));
    await none.finish("p1", "COMPLETED");
    await none.finish("p2", "COMPLETED");
    expect((await none.finish("p3", "COMPLETED")).skipped).toHaveLength(1);
  });

  it("none_failed: a skipped parent is fine, a dead one is not", async () => {
    const nodes: NodeSpec[] = [
      { key: "a" },
      { key: "b", depends_on: ["a"] },
      { key: "c" },
      { key: "d", depends_on: ["b", "c"], trigger_rule: "none_failed" },
    ];
    const run = await start(nodes);
    expect((await run.finish("a", "DEAD")).skipped).toHaveLength(1); // b
    expect((await run.finish("c", "COMPLETED")).released).toHaveLength(1); // d
    const dead = await start(nodes);
    await dead.finish("a", "COMPLETED");
    expect((await dead.finish("c", "DEAD")).skipped).toHaveLength(1); // d
  });
});

describe("shapes", () => {
  it("a diamond: d after both b and c, and d sees its parents' results", async () => {
    const run = await start([
      { key: "a" },
      { key: "b", depends_on: ["a"] },
      { key: "c", depends_on: ["a"] },
      { key: "d", depends_on: ["b", "c"] },
    ]);
    await run.finish("a", "COMPLETED", { n: 1 });
    await run.finish("b", "COMPLETED", { from: "b" });
    await run.finish("c", "COMPLETED", ["c"]);
    const results = await parentResults(w.pool, run.s.idOf.get("d")!);
    expect(results).toEqual({ b: { from: "b" }, c: ["c"] });
    expect(await parentResults(w.pool, run.s.idOf.get("a")!)).toEqual({});
    await run.finish("d", "COMPLETED");
    expect((await statesOf(w, run.s)).workflow.status).toBe("COMPLETED");
  });

  it("skips propagate through a chain; all_done stops them", async () => {
    const run = await start([
      { key: "a" },
      { key: "b", depends_on: ["a"] },
      { key: "c", depends_on: ["b"] },
      { key: "d", depends_on: ["c"] },
      { key: "cleanup", depends_on: ["d"], trigger_rule: "all_done" },
    ]);
    const step = await run.finish("a", "DEAD");
    expect(step.skipped).toHaveLength(3);
    expect(step.released).toHaveLength(1);
    await run.finish("cleanup", "COMPLETED");
    expect(run.oracle.status()).toBe("FAILED");
  });

  it("a fan-out of 1,000 children and a fan-in back", async () => {
    const children = Array.from({ length: 1000 }, (_, i) => `c${i}`);
    const run = await start([
      { key: "root" },
      ...children.map((key) => ({ key, depends_on: ["root"] })),
      { key: "sink", depends_on: children },
    ]);
    expect((await run.finish("root", "COMPLETED")).released).toHaveLength(1000);
    for (const key of children.slice(0, -1)) {
      const step = await finish(w, run.s.idOf.get(key)!, "COMPLETED", { result: key });
      expect(step.released).toEqual([]);
    }
    const last = await finish(w, run.s.idOf.get(children.at(-1)!)!, "COMPLETED");
    expect(last.released.map((e) => e.taskId)).toEqual([run.s.idOf.get("sink")]);
    const results = await parentResults(w.pool, run.s.idOf.get("sink")!);
    expect(Object.keys(results)).toHaveLength(1000);
    expect(results.c7).toBe("c7");
    expect((await statesOf(w, run.s)).workflow.status).toBe("RUNNING");
    await finish(w, run.s.idOf.get("sink")!, "COMPLETED");
    expect((await statesOf(w, run.s)).workflow).toMatchObject({
      status: "COMPLETED",
      pending_nodes: 0,
    });
  }, 180_000);
});

describe("fail_fast and idempotence", () => {
  it("fail_fast: a death cancels every pending node, a running one finishes", async () => {
    const run = await start(
      [
        { key: "a" },
        { key: "b" },
        { key: "c" },
        { key: "d", depends_on: ["a", "b"] },
        { key: "e", depends_on: ["c"], trigger_rule: "one_failed" },
      ],
      true,
    );
    const b = await startNode(w, run.s.idOf.get("b")!);
    run.oracle.start("b");
    const step = await run.finish("a", "DEAD");
    expect(step.cancelled).toHaveLength(3); // c, d, e
    expect((await statesOf(w, run.s)).workflow.status).toBe("RUNNING");
    const last = await run.finish("b", "COMPLETED", undefined, b);
    expect(last.finished).toEqual({ workflowId: run.s.draft.id, status: "FAILED" });
  });

  it("releasing twice for the same parent changes nothing more", async () => {
    const { s } = await start([{ key: "a" }, { key: "b", depends_on: ["a"] }]);
    const client = await w.pool.connect();
    try {
      await finishTask(w, client, s.idOf.get("a")!, "COMPLETED");
      const before = await statesOf(w, s);
      const runAt = await client.query(
        "SELECT (extract(epoch FROM run_at) * 1000)::float8 AS ms FROM tasks WHERE id = $1",
        [s.idOf.get("a")],
      );
      const again = await client.query(
        "SELECT * FROM cf_release_dependents($1, to_timestamp($2 / 1000.0), now())",
        [s.idOf.get("a"), runAt.rows[0].ms],
      );
      expect(again.rows).toEqual([]);
      const after = await statesOf(w, s);
      expect(after.nodes).toEqual(before.nodes);
      expect(after.workflow).toEqual(before.workflow);
    } finally {
      client.release();
    }
  });
});

describe("a crash between the release and the commit", () => {
  it("loses nothing and duplicates nothing: the release commits with the completion or not at all", async () => {
    const { s } = await start([{ key: "a" }, { key: "b", depends_on: ["a"] }]);
    const client = new pg.Client({ connectionString: w.db.url });
    client.on("error", () => undefined);
    await client.connect();
    const pid = (client as unknown as { processID: number }).processID;
    // The backend dies (as in a kill -9 of the worker's connection) after the
    // release ran and before COMMIT.
    const attempt = await startNode(w, s.idOf.get("a")!);
    await expect(
      finishTask(w, client, s.idOf.get("a")!, "COMPLETED", {
        started: attempt,
        beforeCommit: async () => {
          await w.pool.query("SELECT pg_terminate_backend($1)", [pid]);
        },
      }),
    ).rejects.toThrow();
    await client.end().catch(() => undefined);
    expect((await statesOf(w, s)).nodes).toEqual({ a: "RUNNING", b: "WAITING" });
    const node = await w.pool.query("SELECT * FROM workflow_nodes WHERE task_id = $1", [
      s.idOf.get("b"),
    ]);
    expect(node.rows[0]).toMatchObject({ state: "WAITING", parents_completed: 0 });
    // The worker sends its completion again (same attempt, same token) and this time it
    // commits: one release.
    const step = await finish(w, s.idOf.get("a")!, "COMPLETED", { started: attempt });
    expect(step.released.map((e) => e.taskId)).toEqual([s.idOf.get("b")]);
    expect((await statesOf(w, s)).nodes).toEqual({ a: "COMPLETED", b: "SCHEDULED" });
  });
});

describe("timing of a release", () => {
  it("delay_ms counts from the release; run_at is a not-before, even in another day's partition", async () => {
    const nowMs = Date.now();
    const tomorrow = new Date(nowMs + 86_400_000 + 3_600_000).toISOString();
    const { s } = await start([
      { key: "a" },
      { key: "later", depends_on: ["a"], delay_ms: 60_000 },
      { key: "tomorrow", depends_on: ["a"], run_at: tomorrow },
      { key: "now", depends_on: ["a"] },
    ]);
    const releaseMs = nowMs + 5000;
    const step = await finish(w, s.idOf.get("a")!, "COMPLETED", { nowMs: releaseMs });
    const at = new Map(step.released.map((e) => [s.keyOf.get(e.taskId), e.runAtMs]));
    expect(at.get("later")).toBe(releaseMs + 60_000);
    expect(at.get("tomorrow")).toBe(Date.parse(tomorrow));
    expect(at.get("now")).toBe(releaseMs);
    const stored = await w.pool.query(
      "SELECT workflow_node, (extract(epoch FROM run_at) * 1000)::float8 AS ms FROM tasks WHERE workflow_id = $1",
      [s.draft.id],
    );
    for (const row of stored.rows)
      if (at.has(row.workflow_node)) expect(row.ms).toBe(at.get(row.workflow_node));
  });
});

describe("partition pruning", () => {
  it("a release locks only the partitions of the days it touches, not the whole horizon", async () => {
    const partitions = await w.pool.query(
      "SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'tasks'::regclass",
    );
    expect(partitions.rows[0].n).toBeGreaterThan(5);
    const { s } = await start([
      { key: "a" },
      { key: "b", depends_on: ["a"] },
      { key: "c", depends_on: ["a"], trigger_rule: "one_failed" },
    ]);
    const client = await w.pool.connect();
    try {
      let locked: string[] = [];
      const step = await finishTask(w, client, s.idOf.get("a")!, "COMPLETED", {
        beforeCommit: async () => {
          const locks = await client.query(
            `SELECT DISTINCT c.relname FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
              WHERE l.pid = pg_backend_pid() AND c.relname ~ '^tasks_p[0-9]{8}$'`,
          );
          locked = locks.rows.map((r) => r.relname);
        },
      });
      expect(step.released).toHaveLength(1);
      expect((await statesOf(w, s)).nodes).toMatchObject({ b: "SCHEDULED", c: "SKIPPED" });
      expect(locked.length).toBeGreaterThan(0);
      expect(locked.length).toBeLessThanOrEqual(2);
      await client.query("BEGIN");
      await parentResults(client, s.idOf.get("b")!);
      const locks = await client.query(
        `SELECT DISTINCT c.relname FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
          WHERE l.pid = pg_backend_pid() AND c.relname ~ '^tasks_p[0-9]{8}$'`,
      );
      await client.query("COMMIT");
      expect(locks.rows.length).toBeLessThanOrEqual(1);
    } finally {
      client.release();
    }
  });
});

describe("concurrent parent completions", () => {
  it("two parents completing at the same instant in two transactions release the child once", async () => {
    const { s } = await start([
      { key: "p1" },
      { key: "p2" },
      { key: "c", depends_on: ["p1", "p2"] },
    ]);
    const c1 = new pg.Client({ connectionString: w.db.url });
    const c2 = new pg.Client({ connectionString: w.db.url });
    await Promise.all([c1.connect(), c2.connect()]);
    try {
      let secondStarted!: () => void;
      const started = new Promise<void>((resolve) => {
        secondStarted = resolve;
      });
      let firstHolds!: () => void;
      const holding = new Promise<void>((resolve) => {
        firstHolds = resolve;
      });
      // The first holds its transaction open (and the workflow lock, taken by its release)
      // until the second is blocked on that lock; the second starts only once the first holds it.
      const first = finishTask(w, c1, s.idOf.get("p1")!, "COMPLETED", {
        beforeCommit: async () => {
          firstHolds();
          await started;
          await waitForLockWait(w, c2);
        },
      });
      const second = (async () => {
        await holding;
        const p = finishTask(w, c2, s.idOf.get("p2")!, "COMPLETED");
        secondStarted();
        return p;
      })();
      const [a, b] = await Promise.all([first, second]);
      expect(a.released).toEqual([]);
      expect(b.released.map((e) => e.taskId)).toEqual([s.idOf.get("c")]);
      const node = await w.pool.query("SELECT * FROM workflow_nodes WHERE task_id = $1", [
        s.idOf.get("c"),
      ]);
      expect(node.rows[0]).toMatchObject({ state: "RELEASED", parents_completed: 2 });
    } finally {
      await Promise.all([c1.end(), c2.end()]);
    }
  }, 120_000);

  it("50 parents completing at once: the child is released exactly once, by the last", async () => {
    const parents = Array.from({ length: 50 }, (_, i) => `p${i}`);
    const { s } = await start([
      ...parents.map((key) => ({ key })),
      { key: "c", depends_on: parents },
      { key: "any", depends_on: parents, trigger_rule: "one_success" },
    ]);
    const steps = await Promise.all(parents.map((key) => finish(w, s.idOf.get(key)!, "COMPLETED")));
    const released = steps.flatMap((step) => step.released.map((e) => s.keyOf.get(e.taskId)));
    expect(released.sort()).toEqual(["any", "c"]);
    const node = await w.pool.query("SELECT * FROM workflow_nodes WHERE task_id = $1", [
      s.idOf.get("c"),
    ]);
    expect(node.rows[0]).toMatchObject({ state: "RELEASED", parents_completed: 50 });
  }, 120_000);
});

describe("property: the SQL releaser behaves as the in-memory run", () => {
  const anyRun = fc.integer({ min: 1, max: 9 }).chain((n) =>
    fc.record({
      parents: fc.array(fc.array(fc.nat(), { maxLength: 3 }), { minLength: n, maxLength: n }),
      rules: fc.array(fc.constantFrom(...TRIGGER_RULES), { minLength: n, maxLength: n }),
      failFast: fc.boolean(),
      picks: fc.array(fc.tuple(fc.nat(), fc.boolean()), { minLength: 20, maxLength: 20 }),
    }),
  );

  it("random DAGs, rules and outcomes", async () => {
    await fc.assert(
      fc.asyncProperty(anyRun, async ({ parents, rules, failFast, picks }) => {
        const nodes: NodeSpec[] = parents.map((ps, i) => ({
          key: `n${i}`,
          depends_on: i === 0 ? [] : [...new Set(ps.map((p) => p % i))].map((p) => `n${p}`),
          trigger_rule: rules[i]!,
        }));
        const run = await start(nodes, failFast);
        for (const [pick, ok] of picks) {
          const due = nodes.map((n) => n.key).filter((k) => run.oracle.state(k) === "SCHEDULED");
          if (due.length === 0) break;
          await run.finish(due[pick % due.length]!, ok ? "COMPLETED" : "DEAD");
        }
      }),
      propertyParams({ numRuns: 30 }),
    );
  }, 120_000);
});

/** Resolves once `client`'s backend waits on a lock (the workflow row). */
async function waitForLockWait(db: WorkflowDb, client: pg.Client): Promise<void> {
  const pid = (client as unknown as { processID: number }).processID;
  for (let i = 0; i < 3000; i++) {
    const r = await db.pool.query("SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1", [
      pid,
    ]);
    if (r.rows[0]?.wait_event_type === "Lock") return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("the second transaction never waited on the workflow lock");
}
