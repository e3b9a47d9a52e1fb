/**
 * POST/GET/DELETE /v1/workflows through the real API on real Postgres and
 * Redis. No worker runs here: a node "runs" through the statements a worker
 * sends — armed, started, and ended by the fenced completion or failure that
 * runs the releaser in its transaction (support/workflows.ts).
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPgPool, type PgPool } from "../../src/adapters/pg/pool.js";
import { dueKey, shardOf } from "../../src/domain/shard.js";
import {
  type ApiFixture,
  call,
  newTenant,
  startApiFixture,
  type TestTenant,
} from "./support/api.js";
import { TEST_REDIS_URL } from "./support/services.js";
import { finish, startNode } from "./support/workflows.js";

let fixture: ApiFixture;
let a: TestTenant;
let b: TestTenant;
let redis: Redis;
let pool: PgPool;

beforeAll(async () => {
  fixture = await startApiFixture();
  a = fixture.tenant;
  b = await newTenant(fixture.config);
  redis = new Redis(TEST_REDIS_URL);
  pool = createPgPool({
    connectionString: fixture.db.url,
    maxConnections: 4,
    statementTimeoutMs: 30_000,
    connectTimeoutMs: 5000,
    role: null,
    applicationName: "api-workflows-test",
    onError: () => undefined,
  });
});

afterAll(async () => {
  redis?.disconnect();
  await pool?.end();
  await fixture?.stop();
});

const api = (method: string, path: string, key: string, body?: unknown) =>
  call(fixture.api.baseUrl, method, path, body === undefined ? { key } : { key, body });
const post = (body: unknown, key = a.apiKey) => api("POST", "/v1/workflows", key, body);

const diamond = {
  nodes: [
    { key: "extract", type: "noop", payload: { n: 1 } },
    { key: "left", type: "noop", depends_on: ["extract"] },
    { key: "right", type: "noop", depends_on: ["extract"], delay_ms: 1000 },
    { key: "load", type: "noop", depends_on: ["left", "right"], trigger_rule: "all_done" },
  ],
};

const nodeOf = (body: { nodes: Array<Record<string, unknown>> }, key: string) =>
  body.nodes.find((n) => n.key === key) as Record<string, unknown> & { task_id: string };

describe("POST /v1/workflows", () => {
  it("creates the workflow, its tasks and edges in one commit; the root reaches Redis", async () => {
    const res = await post(diamond);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: "RUNNING", fail_fast: false, node_count: 4 });
    expect(res.body.nodes.map((n: { key: string; status: string }) => [n.key, n.status])).toEqual([
      ["extract", "SCHEDULED"],
      ["left", "WAITING"],
      ["right", "WAITING"],
      ["load", "WAITING"],
    ]);
    expect(nodeOf(res.body, "load")).toMatchObject({
      trigger_rule: "all_done",
      depends_on: ["left", "right"],
    });
    const id = res.body.id;
    const tasks = await pool.query(
      "SELECT workflow_node, status, tenant_id FROM tasks WHERE workflow_id = $1 ORDER BY workflow_node",
      [id],
    );
    expect(tasks.rows).toEqual([
      { workflow_node: "extract", status: "SCHEDULED", tenant_id: a.id },
      { workflow_node: "left", status: "WAITING", tenant_id: a.id },
      { workflow_node: "load", status: "WAITING", tenant_id: a.id },
      { workflow_node: "right", status: "WAITING", tenant_id: a.id },
    ]);
    const edges = await pool.query(
      "SELECT count(*)::int AS n FROM workflow_edges WHERE workflow_id = $1",
      [id],
    );
    expect(edges.rows[0].n).toBe(4);
    const audit = await pool.query(
      "SELECT action, cardinality(task_ids) AS n FROM audit_log WHERE details->>'workflow_id' = $1",
      [id],
    );
    expect(audit.rows).toEqual([{ action: "workflow.create", n: 4 }]);
    const root = nodeOf(res.body, "extract");
    const key = (taskId: string) => dueKey(fixture.config.redisKeyPrefix, shardOf(a.id, taskId));
    await expect.poll(() => redis.zscore(key(root.task_id), root.task_id)).not.toBeNull();
    const waiting = nodeOf(res.body, "left");
    expect(await redis.zscore(key(waiting.task_id), waiting.task_id)).toBeNull();
  });

  it("refuses a cycle with 422 naming it, and writes nothing", async () => {
    const before = await pool.query("SELECT count(*)::int AS n FROM tasks");
    const res = await post({
      nodes: [
        { key: "a", type: "noop", depends_on: ["c"] },
        { key: "b", type: "noop", depends_on: ["a"] },
        { key: "c", type: "noop", depends_on: ["b"] },
      ],
    });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe("unprocessable");
    expect(res.body.error.details.rule).toBe("cycle");
    expect(res.body.error.message).toMatch(/cycle: ([abc]) → [abc] → [abc] → \1$/);
    expect((await pool.query("SELECT count(*)::int AS n FROM tasks")).rows[0].n).toBe(
      before.rows[0].n,
    );
  });

  it.each([
    [{ nodes: [{ key: "a", type: "noop", depends_on: ["nope"] }] }, 422, "unknown_dependency"],
    [
      {
        nodes: [
          { key: "a", type: "noop" },
          { key: "a", type: "noop" },
        ],
      },
      422,
      "duplicate_key",
    ],
    [
      { nodes: Array.from({ length: 10_001 }, (_, i) => ({ key: `k${i}`, type: "noop" })) },
      422,
      "too_many_nodes",
    ],
    [{ nodes: [{ key: "a", type: "noop", max_attempts: 0 }] }, 422, undefined],
    [{ nodes: [{ key: "a" }] }, 400, undefined],
    [{ tasks: [] }, 400, undefined],
  ])("refuses bad workflow %# with %i", async (body, status, rule) => {
    const res = await post(body);
    expect(res.status).toBe(status);
    if (rule) expect(res.body.error.details.rule).toBe(rule);
  });

  it("needs an API key", async () => {
    expect(
      (await call(fixture.api.baseUrl, "POST", "/v1/workflows", { body: diamond })).status,
    ).toBe(401);
  });
});

describe("GET /v1/workflows/{id}", () => {
  it("shows the workflow status and each node's status as parents complete", async () => {
    const created = (await post(diamond)).body;
    await finish({ pool }, nodeOf(created, "extract").task_id, "COMPLETED");
    const got = await api("GET", `/v1/workflows/${created.id}`, a.apiKey);
    expect(got.status).toBe(200);
    const status = (key: string) => nodeOf(got.body, key).status;
    expect([status("extract"), status("left"), status("right"), status("load")]).toEqual([
      "COMPLETED",
      "SCHEDULED",
      "SCHEDULED",
      "WAITING",
    ]);
    // right's delay_ms counts from its release
    const right = nodeOf(got.body, "right");
    expect(Date.parse(right.run_at as string)).toBeGreaterThan(
      Date.parse(created.created_at) + 1000,
    );
    await finish({ pool }, nodeOf(created, "left").task_id, "COMPLETED");
    await finish({ pool }, nodeOf(created, "right").task_id, "DEAD");
    await finish({ pool }, nodeOf(created, "load").task_id, "COMPLETED");
    const done = (await api("GET", `/v1/workflows/${created.id}`, a.apiKey)).body;
    expect(done).toMatchObject({ status: "FAILED", pending_nodes: 0 });
    expect(done.finished_at).not.toBeNull();
  });

  it("is 404 for another tenant's workflow and for a malformed id", async () => {
    const created = (await post(diamond)).body;
    expect((await api("GET", `/v1/workflows/${created.id}`, b.apiKey)).status).toBe(404);
    expect((await api("DELETE", `/v1/workflows/${created.id}`, b.apiKey)).status).toBe(404);
    expect((await api("GET", "/v1/workflows/not-a-uuid", a.apiKey)).status).toBe(404);
  });
});

describe("row-level security", () => {
  it("the API role sees another tenant's workflow rows, nodes and edges as absent", async () => {
    const created = (await post(diamond)).body;
    const client = await pool.connect();
    try {
      await client.query("BEGIN; SET LOCAL ROLE chronofence_api");
      await client.query("SELECT set_config('app.tenant_id', $1, true)", [b.id]);
      const counts = await client.query(
        `SELECT (SELECT count(*)::int FROM workflows WHERE id = $1) AS workflows,
                (SELECT count(*)::int FROM workflow_nodes WHERE workflow_id = $1) AS nodes,
                (SELECT count(*)::int FROM workflow_edges WHERE workflow_id = $1) AS edges`,
        [created.id],
      );
      const cancel = await client.query(
        "SELECT outcome FROM cf_cancel_workflow($1, $2, now(), $3)",
        [b.id, created.id, b.apiKeyId],
      );
      await client.query("ROLLBACK");
      expect(counts.rows[0]).toEqual({ workflows: 0, nodes: 0, edges: 0 });
      expect(cancel.rows[0].outcome).toBe("not_found");
    } finally {
      client.release();
    }
  });
});

describe("DELETE /v1/workflows/{id}", () => {
  it("cancels the pending nodes, not a running one, and then the workflow ends CANCELLED", async () => {
    const created = (
      await post({
        nodes: [
          { key: "r1", type: "noop" },
          { key: "r2", type: "noop" },
          { key: "child", type: "noop", depends_on: ["r1", "r2"] },
        ],
      })
    ).body;
    const running = nodeOf(created, "r1").task_id;
    const attempt = await startNode({ pool }, running);
    const res = await api("DELETE", `/v1/workflows/${created.id}`, a.apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: "CANCELLED", pending_nodes: 1, finished_at: null });
    const statuses = res.body.nodes.map((n: { key: string; status: string }) => [n.key, n.status]);
    expect(statuses).toEqual([
      ["r1", "RUNNING"],
      ["r2", "CANCELLED"],
      ["child", "CANCELLED"],
    ]);
    const audit = await pool.query(
      "SELECT cardinality(task_ids) AS n FROM audit_log WHERE action = 'workflow.cancel' AND details->>'workflow_id' = $1",
      [created.id],
    );
    expect(audit.rows).toEqual([{ n: 2 }]);
    await finish({ pool }, running, "COMPLETED", { started: attempt });
    const ended = (await api("GET", `/v1/workflows/${created.id}`, a.apiKey)).body;
    expect(ended).toMatchObject({ status: "CANCELLED", pending_nodes: 0 });
    expect(ended.finished_at).not.toBeNull();
    expect((await api("DELETE", `/v1/workflows/${created.id}`, a.apiKey)).status).toBe(409);
  });

  it("cancelling one waiting node through DELETE /v1/tasks/{id} skips its all_success child", async () => {
    const created = (
      await post({
        nodes: [
          { key: "a", type: "noop" },
          { key: "b", type: "noop", depends_on: ["a"] },
          { key: "c", type: "noop", depends_on: ["b"] },
          { key: "d", type: "noop", depends_on: ["b"], trigger_rule: "all_done" },
        ],
      })
    ).body;
    const cancelled = await api("DELETE", `/v1/tasks/${nodeOf(created, "b").task_id}`, a.apiKey);
    expect(cancelled.status).toBe(200);
    const got = (await api("GET", `/v1/workflows/${created.id}`, a.apiKey)).body;
    expect(got.nodes.map((n: { status: string }) => n.status)).toEqual([
      "SCHEDULED",
      "CANCELLED",
      "SKIPPED",
      "SCHEDULED",
    ]);
    expect(got.pending_nodes).toBe(2);
  });
});
