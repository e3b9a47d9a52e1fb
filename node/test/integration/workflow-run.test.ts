/**
 * DAG workflows end to end on the real Postgres, Redis and Kafka: API →
 * dispatch roles → worker, in-process. A node's children are released in
 * its fenced completion's transaction; a child's handler sees its parents'
 * results; trigger rules, skips, fail_fast and a fan-out/fan-in of 1,000.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { PermanentError } from "../../src/domain/execution-error.js";
import { call, type TestTenant } from "./support/api.js";
import { requireKafka } from "./support/kafka.js";
import { type Pipeline, startPipeline } from "./support/pipeline.js";
import { withPg } from "./support/services.js";

vi.setConfig({ testTimeout: 240_000 });

let fixture: Pipeline;
let tenant: TestTenant;

/** Every run of the `trace` handler, in the order they started. */
interface Run {
  key: string;
  taskId: string;
  attempt: number;
  parents: Record<string, unknown> | null;
}
const runs: Run[] = [];

beforeAll(async () => {
  await requireKafka();
  fixture = await startPipeline(
    "workflow-run",
    { workerLeaseMs: 3000, workerHeartbeatMs: 500 },
    {
      worker: {
        register: (registry) =>
          registry
            .register("trace", async (payload, ctx) => {
              const key = (payload as { key: string }).key;
              runs.push({
                key,
                taskId: ctx.taskId,
                attempt: ctx.attempt,
                parents: ctx.parentResults,
              });
              return { from: key };
            })
            // Fails (retryably) only once the node `payload.after` of its workflow died or was cancelled.
            .register("fail_after", async (payload, ctx) => {
              const after = (payload as { after: string }).after;
              await expect
                .poll(() => nodeStatus(ctx.taskId, after), { timeout: 60_000, interval: 50 })
                .toMatch(/^(DEAD|CANCELLED)$/);
              throw new Error(`failing after ${after} died`);
            })
            .register("refuse", async (payload, ctx) => {
              // With `payload.while_running`: only once that node of its workflow is running.
              const other = (payload as { while_running?: string } | null)?.while_running;
              if (other) {
                await expect
                  .poll(() => nodeStatus(ctx.taskId, other), { timeout: 60_000, interval: 50 })
                  .toBe("RUNNING");
              }
              throw new PermanentError("refused", { code: "refused" });
            }),
      },
    },
  );
  tenant = fixture.tenant;
});

afterAll(async () => {
  await fixture?.stop();
});

/** The status of node `key` in the workflow of task `taskId`. */
const nodeStatus = (taskId: string, key: string): Promise<string> =>
  withPg(
    fixture.db.url,
    async (c) =>
      (
        await c.query(
          `SELECT status FROM tasks
            WHERE workflow_id = (SELECT workflow_id FROM workflow_nodes WHERE task_id = $1)
              AND workflow_node = $2`,
          [taskId, key],
        )
      ).rows[0]?.status,
  );

type NodeView = { key: string; task_id: string; status: string; attempt: number };
type WorkflowView = { id: string; status: string; nodes: NodeView[] };

async function submit(body: Record<string, unknown>): Promise<WorkflowView> {
  const answer = await call(fixture.api.baseUrl, "POST", "/v1/workflows", {
    key: tenant.apiKey,
    body,
  });
  expect(answer.status).toBe(201);
  return answer.body;
}

const view = async (id: string): Promise<WorkflowView> =>
  (await call(fixture.api.baseUrl, "GET", `/v1/workflows/${id}`, { key: tenant.apiKey })).body;

const TERMINAL = new Set(["COMPLETED", "DEAD", "SKIPPED", "CANCELLED"]);

/** Polls until every node is terminal (a cancelled workflow is CANCELLED before its running nodes end). */
async function finished(id: string, timeoutMs = 120_000): Promise<WorkflowView> {
  await expect
    .poll(async () => (await view(id)).nodes.every((n) => TERMINAL.has(n.status)), {
      timeout: timeoutMs,
      interval: 200,
    })
    .toBe(true);
  return view(id);
}

const statuses = (wf: WorkflowView) => Object.fromEntries(wf.nodes.map((n) => [n.key, n.status]));
const runsOf = (wf: WorkflowView) => {
  const ids = new Set(wf.nodes.map((n) => n.task_id));
  return runs.filter((r) => ids.has(r.taskId));
};
const trace = (key: string, extra: Record<string, unknown> = {}) => ({
  key,
  type: "trace",
  payload: { key },
  ...extra,
});

describe("workflow runs", () => {
  it("a diamond runs every node once, in order; a child sees its parents' results", async () => {
    const wf = await submit({
      nodes: [
        trace("a"),
        trace("b", { depends_on: ["a"] }),
        trace("c", { depends_on: ["a"], delay_ms: 300 }),
        trace("d", { depends_on: ["b", "c"] }),
      ],
    });
    const done = await finished(wf.id);
    expect(done.status).toBe("COMPLETED");
    expect(done.nodes.map((n) => [n.key, n.status, n.attempt])).toEqual([
      ["a", "COMPLETED", 1],
      ["b", "COMPLETED", 1],
      ["c", "COMPLETED", 1],
      ["d", "COMPLETED", 1],
    ]);
    const mine = runsOf(done);
    expect(mine.map((r) => r.key).sort()).toEqual(["a", "b", "c", "d"]);
    const order = mine.map((r) => r.key);
    expect(order[0]).toBe("a");
    expect(order[3]).toBe("d");
    const byKey = Object.fromEntries(mine.map((r) => [r.key, r.parents]));
    expect(byKey).toEqual({
      a: {},
      b: { a: { from: "a" } },
      c: { a: { from: "a" } },
      d: { b: { from: "b" }, c: { from: "c" } },
    });
  });

  it("trigger rules after a dead node: one_failed and all_done run, all_success is skipped and skips propagate; a dead node refuses replay", async () => {
    const wf = await submit({
      nodes: [
        { key: "bad", type: "refuse", max_attempts: 3 },
        trace("good"),
        trace("on_fail", { depends_on: ["bad"], trigger_rule: "one_failed" }),
        trace("strict", { depends_on: ["bad", "good"] }),
        trace("after_strict", { depends_on: ["strict"] }),
        trace("cleanup", { depends_on: ["bad", "good"], trigger_rule: "all_done" }),
        trace("if_ok", { depends_on: ["good"], trigger_rule: "one_failed" }),
      ],
    });
    const done = await finished(wf.id);
    expect(done.status).toBe("FAILED");
    expect(statuses(done)).toEqual({
      bad: "DEAD",
      good: "COMPLETED",
      on_fail: "COMPLETED",
      strict: "SKIPPED",
      after_strict: "SKIPPED",
      cleanup: "COMPLETED",
      if_ok: "SKIPPED",
    });
    expect(done.nodes.find((n) => n.key === "bad")?.attempt).toBe(1);
    const mine = runsOf(done);
    expect(mine.map((r) => r.key).sort()).toEqual(["cleanup", "good", "on_fail"]);
    // A dead parent has no result entry.
    expect(mine.find((r) => r.key === "cleanup")?.parents).toEqual({ good: { from: "good" } });
    expect(mine.find((r) => r.key === "on_fail")?.parents).toEqual({});

    const bad = done.nodes.find((n) => n.key === "bad")!;
    const replay = await call(fixture.api.baseUrl, "POST", `/v1/tasks/${bad.task_id}/replay`, {
      key: tenant.apiKey,
    });
    expect(replay.status).toBe(409);
    expect(replay.body.error.details).toMatchObject({ workflow_id: wf.id });
    expect((await view(wf.id)).nodes.find((n) => n.key === "bad")?.status).toBe("DEAD");
  });

  it("fail_fast: a dead node cancels the pending nodes; a running node's retry is cancelled, not run", async () => {
    const wf = await submit({
      fail_fast: true,
      nodes: [
        { key: "bad", type: "refuse", payload: { while_running: "running" } },
        {
          key: "running",
          type: "fail_after",
          payload: { after: "bad" },
          max_attempts: 5,
          backoff: { base_ms: 100, max_ms: 100 },
        },
        trace("child", { depends_on: ["bad"], trigger_rule: "one_failed" }),
        trace("later", { delay_ms: 60_000 }),
      ],
    });
    const done = await finished(wf.id);
    expect(done.status).toBe("FAILED");
    expect(statuses(done)).toEqual({
      bad: "DEAD",
      running: "CANCELLED",
      child: "CANCELLED",
      later: "CANCELLED",
    });
    expect(done.nodes.find((n) => n.key === "running")?.attempt).toBe(1);
    expect(runsOf(done)).toEqual([]);
  });

  it("a cancelled workflow's running node is cancelled instead of retried", async () => {
    const wf = await submit({
      nodes: [
        { key: "gate", type: "refuse", delay_ms: 60_000 },
        {
          key: "running",
          type: "fail_after",
          payload: { after: "gate" },
          max_attempts: 5,
          backoff: { base_ms: 100, max_ms: 100 },
        },
      ],
    });
    const running = wf.nodes.find((n) => n.key === "running")!;
    await expect
      .poll(() => nodeStatus(running.task_id, "running"), { timeout: 60_000, interval: 50 })
      .toBe("RUNNING");
    const cancel = await call(fixture.api.baseUrl, "DELETE", `/v1/workflows/${wf.id}`, {
      key: tenant.apiKey,
    });
    expect(cancel.status).toBeLessThan(300);
    const done = await finished(wf.id);
    expect(done.status).toBe("CANCELLED");
    expect(done.nodes.find((n) => n.key === "running")).toMatchObject({
      status: "CANCELLED",
      attempt: 1,
    });
  });

  it("a fan-out of 1,000 children and a fan-in back completes, each node once", async () => {
    const children = Array.from({ length: 1000 }, (_, i) => `c${i}`);
    const wf = await submit({
      nodes: [
        trace("root"),
        ...children.map((k) => trace(k, { depends_on: ["root"] })),
        trace("sink", { depends_on: children }),
      ],
    });
    const done = await finished(wf.id, 200_000);
    expect(done.status).toBe("COMPLETED");
    expect(done.nodes).toHaveLength(1002);
    expect(done.nodes.every((n) => n.status === "COMPLETED" && n.attempt === 1)).toBe(true);
    const mine = runsOf(done);
    expect(mine).toHaveLength(1002);
    expect(new Set(mine.map((r) => r.key)).size).toBe(1002);
    const sink = mine.find((r) => r.key === "sink")!;
    expect(Object.keys(sink.parents ?? {})).toHaveLength(1000);
    expect(sink.parents?.c999).toEqual({ from: "c999" });
    expect(mine[mine.length - 1]!.key).toBe("sink");
    expect(mine[0]!.key).toBe("root");
  });
});
