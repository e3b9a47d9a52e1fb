/**
 * Success paths, idempotency and tenant isolation of the task endpoints, on
 * both backends (support/api.ts): real Postgres and Redis, and the embedded
 * default (PGlite, in-process hot tier).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ApiFixture,
  call,
  type Queryable,
  startApiFixture,
  type TestApi,
  type TestTenant,
} from "./support/api.js";

let fixture: ApiFixture;
let api: TestApi;
let a: TestTenant;
let b: TestTenant;

beforeAll(async () => {
  fixture = await startApiFixture();
  ({ api, tenant: a } = fixture);
  b = await fixture.newTenant();
});

afterAll(async () => {
  await fixture?.stop();
});

const post = (key: string, body: unknown) => call(api.baseUrl, "POST", "/v1/tasks", { key, body });
const withDb = <T>(fn: (c: Queryable) => Promise<T>) => fixture.withDb(fn);
const rowOf = (id: string) =>
  withDb(async (c) => (await c.query("SELECT * FROM tasks WHERE id = $1", [id])).rows[0]);

describe("health", () => {
  it("answers /healthz and /readyz with both dependencies up", async () => {
    expect((await call(api.baseUrl, "GET", "/healthz")).status).toBe(200);
    const ready = await call(api.baseUrl, "GET", "/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual({ postgres: "ok", redis: "ok" });
  });
});

describe("POST /v1/tasks", () => {
  it("commits the task, audits it, and adds a due-soon task to its hot-tier shard", async () => {
    const res = await post(a.apiKey, {
      type: "email.send",
      payload: { to: "x@y" },
      delay_ms: 60_000,
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      type: "email.send",
      status: "SCHEDULED",
      priority: "standard",
    });
    expect(res.body.payload).toEqual({ to: "x@y" });
    const row = await rowOf(res.body.id);
    expect(row).toMatchObject({
      tenant_id: a.id,
      status: "SCHEDULED",
      max_attempts: 3,
      timeout_ms: 30000,
    });
    expect(row.run_at.toISOString()).toBe(res.body.run_at);
    const audit = await withDb((c) =>
      c.query("SELECT action FROM audit_log WHERE $1 = ANY(task_ids)", [res.body.id]),
    );
    expect(audit.rows).toEqual([{ action: "task.create" }]);
    // The add follows the commit without delaying the answer: wait for it.
    await expect
      .poll(() => fixture.dueRunAtMs({ tenantId: a.id, id: res.body.id }))
      .toBe(Date.parse(res.body.run_at));
  });

  it("keeps a task beyond the hot window out of the hot tier", async () => {
    const res = await post(a.apiKey, { type: "later", delay_ms: 2 * 3_600_000 });
    expect(res.status).toBe(201);
    const now = await post(a.apiKey, { type: "now" }); // a later commit whose add we can wait for
    await fixture.untilDue({ tenantId: a.id, id: now.body.id });
    expect(await fixture.dueRunAtMs({ tenantId: a.id, id: res.body.id })).toBeNull();
  });

  it("treats run_at in the past as due now", async () => {
    const before = Date.now();
    const res = await post(a.apiKey, { type: "t", run_at: "2001-01-01T00:00:00Z" });
    expect(res.status).toBe(201);
    expect(Date.parse(res.body.run_at)).toBeGreaterThanOrEqual(before);
  });

  it("accepts RFC 3339's lowercase t and z in run_at", async () => {
    const runAt = new Date(Date.now() + 86_400_000).toISOString();
    const res = await post(a.apiKey, {
      type: "t",
      run_at: runAt.replace("T", "t").replace("Z", "z"),
    });
    expect(res.status).toBe(201);
    expect(res.body.run_at).toBe(runAt);
  });

  it("accepts every documented field", async () => {
    const runAt = new Date(Date.now() + 86_400_000).toISOString();
    const res = await post(a.apiKey, {
      type: "report:daily/v2",
      payload: [1, "two", { three: null }],
      run_at: runAt,
      priority: "critical",
      idempotency_key: "full-1",
      max_attempts: 7,
      timeout_ms: 1234,
      backoff: { strategy: "fixed", base_ms: 10, max_ms: 20 },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      run_at: runAt,
      priority: "critical",
      idempotency_key: "full-1",
      max_attempts: 7,
      timeout_ms: 1234,
      backoff: { strategy: "fixed", base_ms: 10, max_ms: 20 },
    });
  });
});

describe("idempotency", () => {
  it("replays the same key and body with 200 and the original task", async () => {
    const body = { type: "charge", payload: { cents: 100 }, idempotency_key: "pay-1" };
    const first = await post(a.apiKey, body);
    const again = await post(a.apiKey, body);
    expect(first.status).toBe(201);
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.id).toBe(first.body.id);
    const count = await withDb((c) =>
      c.query("SELECT count(*)::int AS n FROM tasks WHERE idempotency_key = 'pay-1'"),
    );
    expect(count.rows[0].n).toBe(1);
  });

  it("replays a body with reordered keys or explicit defaults as the same request", async () => {
    const first = await call(api.baseUrl, "POST", "/v1/tasks", {
      key: a.apiKey,
      rawBody: '{"type":"charge","idempotency_key":"pay-3","payload":{"cents":100,"to":"x"}}',
    });
    expect(first.status).toBe(201);
    const variants = [
      '{"payload":{"to":"x","cents":100},"idempotency_key":"pay-3","type":"charge"}',
      '{"type":"charge","idempotency_key":"pay-3","payload":{"cents":100,"to":"x"},"priority":"standard"}',
      '{"type":"charge","idempotency_key":"pay-3","payload":{"cents":100,"to":"x"},"max_attempts":3,"timeout_ms":30000,"delay_ms":0,"backoff":{"strategy":"exponential"}}',
    ];
    for (const rawBody of variants) {
      const again = await call(api.baseUrl, "POST", "/v1/tasks", { key: a.apiKey, rawBody });
      expect(again.status, rawBody).toBe(200);
      expect(again.body.id).toBe(first.body.id);
    }
    const other = await post(a.apiKey, {
      type: "charge",
      idempotency_key: "pay-3",
      payload: { cents: 100, to: "x" },
      priority: "critical",
    });
    expect(other.status).toBe(409);
  });

  it("answers 409 for the same key with another body", async () => {
    await post(a.apiKey, { type: "charge", payload: { cents: 1 }, idempotency_key: "pay-2" });
    const res = await post(a.apiKey, {
      type: "charge",
      payload: { cents: 2 },
      idempotency_key: "pay-2",
    });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("idempotency_conflict");
  });

  it("scopes keys by tenant", async () => {
    const body = { type: "charge", idempotency_key: "shared-key" };
    const fromA = await post(a.apiKey, body);
    const fromB = await post(b.apiKey, body);
    expect([fromA.status, fromB.status]).toEqual([201, 201]);
    expect(fromB.body.id).not.toBe(fromA.body.id);
  });

  it("creates one task for concurrent requests with one key", async () => {
    const body = { type: "race", idempotency_key: "race-1" };
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(a.apiKey, body)));
    expect(answers.filter((r) => r.status === 201)).toHaveLength(1);
    expect(answers.filter((r) => r.status === 200)).toHaveLength(19);
    expect(new Set(answers.map((r) => r.body.id)).size).toBe(1);
  });
});

describe("POST /v1/tasks/batch", () => {
  it("commits up to 1000 tasks in one request", async () => {
    const tasks = Array.from({ length: 1000 }, (_, i) => ({
      type: "bulk",
      payload: { i },
      priority: "bulk",
    }));
    const res = await call(api.baseUrl, "POST", "/v1/tasks/batch", {
      key: a.apiKey,
      body: { tasks },
    });
    expect(res.status).toBe(201);
    expect(res.body.tasks).toHaveLength(1000);
    const ids = res.body.tasks.map((t: { id: string }) => t.id);
    const stored = await withDb((c) =>
      c.query("SELECT count(*)::int AS n FROM tasks WHERE id = ANY($1::uuid[])", [ids]),
    );
    expect(stored.rows[0].n).toBe(1000);
  });

  it("reports replays and conflicts per item", async () => {
    await post(a.apiKey, { type: "x", idempotency_key: "b-1" });
    const res = await call(api.baseUrl, "POST", "/v1/tasks/batch", {
      key: a.apiKey,
      body: {
        tasks: [
          { type: "x", idempotency_key: "b-1" },
          { type: "y", idempotency_key: "b-1" },
          { type: "z" },
        ],
      },
    });
    expect(res.status).toBe(201);
    expect(res.body.tasks[0].idempotent_replayed).toBe(true);
    expect(res.body.tasks[1].error.code).toBe("idempotency_conflict");
    expect(res.body.tasks[2]).toMatchObject({ status: "SCHEDULED", idempotent_replayed: false });
  });
});

describe("tenant retry defaults", () => {
  it("fill the retry fields a task leaves out; a task's own values override them", async () => {
    const retryDefaults = { maxAttempts: 7, backoffBaseMs: 250, backoffMaxMs: 9000 };
    const c = await fixture.newTenant({ retryDefaults });
    const plain = await post(c.apiKey, { type: "t", delay_ms: 60_000 });
    expect(plain.status).toBe(201);
    expect(plain.body).toMatchObject({
      max_attempts: 7,
      backoff: { strategy: "exponential", base_ms: 250, max_ms: 9000 },
    });
    expect(await rowOf(plain.body.id)).toMatchObject({
      max_attempts: 7,
      backoff_base_ms: 250,
      backoff_max_ms: 9000,
    });
    const own = await post(c.apiKey, {
      type: "t",
      delay_ms: 60_000,
      max_attempts: 2,
      backoff: { strategy: "fixed", base_ms: 40 },
    });
    expect(own.status).toBe(201);
    expect(await rowOf(own.body.id)).toMatchObject({
      max_attempts: 2,
      backoff_strategy: "fixed",
      backoff_base_ms: 40,
      backoff_max_ms: 9000,
    });
    const batch = await call(api.baseUrl, "POST", "/v1/tasks/batch", {
      key: c.apiKey,
      body: { tasks: [{ type: "t", delay_ms: 60_000 }] },
    });
    expect(batch.status).toBe(201);
    expect(await rowOf(batch.body.tasks[0].id)).toMatchObject({ max_attempts: 7 });
    // Another tenant without defaults keeps the global ones.
    const global = await post(a.apiKey, { type: "t", delay_ms: 60_000 });
    expect(await rowOf(global.body.id)).toMatchObject({ max_attempts: 3, backoff_base_ms: 1000 });
    const conflict = await post(c.apiKey, { type: "t", backoff: { base_ms: 10_000 } });
    expect(conflict.status).toBe(422);
    expect(conflict.body.error.details.issues[0].message).toMatch(/9000, the tenant's default/);
  });
});

describe("GET and DELETE", () => {
  it("gets a task by id", async () => {
    const created = await post(a.apiKey, { type: "get-me", payload: { n: 1 } });
    const res = await call(api.baseUrl, "GET", `/v1/tasks/${created.body.id}`, { key: a.apiKey });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: created.body.id, type: "get-me", payload: { n: 1 } });
  });

  it("lists with filters and keyset pagination", async () => {
    const t = await fixture.newTenant();
    const made = [];
    for (let i = 0; i < 5; i++)
      made.push((await post(t.apiKey, { type: i % 2 ? "odd" : "even" })).body.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = `/v1/tasks?limit=2${cursor ? `&cursor=${cursor}` : ""}`;
      const page = await call(api.baseUrl, "GET", q, { key: t.apiKey });
      expect(page.status).toBe(200);
      expect(page.body.tasks.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.tasks.map((x: { id: string }) => x.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(made);
    const odd = await call(api.baseUrl, "GET", "/v1/tasks?type=odd", { key: t.apiKey });
    expect(odd.body.tasks.map((x: { id: string }) => x.id)).toEqual([made[1], made[3]]);
    await call(api.baseUrl, "DELETE", `/v1/tasks/${made[0]}`, { key: t.apiKey });
    const cancelled = await call(api.baseUrl, "GET", "/v1/tasks?status=CANCELLED", {
      key: t.apiKey,
    });
    expect(cancelled.body.tasks.map((x: { id: string }) => x.id)).toEqual([made[0]]);
  });

  it("cancels a scheduled task once, then answers 409", async () => {
    const created = await post(a.apiKey, { type: "cancel-me" });
    const path = `/v1/tasks/${created.body.id}`;
    const res = await call(api.baseUrl, "DELETE", path, { key: a.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("CANCELLED");
    expect(res.body.cancelled_at).not.toBeNull();
    const again = await call(api.baseUrl, "DELETE", path, { key: a.apiKey });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({
      code: "invalid_transition",
      details: { status: "CANCELLED" },
    });
  });

  it("refuses to cancel a running task (409)", async () => {
    const created = await post(a.apiKey, { type: "busy" });
    await withDb((c) =>
      c.query("UPDATE tasks SET status = 'RUNNING' WHERE id = $1", [created.body.id]),
    );
    const res = await call(api.baseUrl, "DELETE", `/v1/tasks/${created.body.id}`, {
      key: a.apiKey,
    });
    expect(res.status).toBe(409);
    expect((await rowOf(created.body.id)).status).toBe("RUNNING");
  });
});

describe("tenant isolation", () => {
  it("hides tenant A's task from tenant B: read, list and cancel are 404", async () => {
    const created = await post(a.apiKey, { type: "secret" });
    const path = `/v1/tasks/${created.body.id}`;
    expect((await call(api.baseUrl, "GET", path, { key: b.apiKey })).status).toBe(404);
    expect((await call(api.baseUrl, "DELETE", path, { key: b.apiKey })).status).toBe(404);
    const list = await call(api.baseUrl, "GET", "/v1/tasks?limit=1000", { key: b.apiKey });
    expect(list.body.tasks.map((x: { id: string }) => x.id)).not.toContain(created.body.id);
    expect((await rowOf(created.body.id)).status).toBe("SCHEDULED");
  });

  it("enforces it in Postgres too: the API role sees only app.tenant_id's rows", async () => {
    const created = await post(a.apiKey, { type: "rls" });
    const seen = await withDb(async (c) => {
      await c.query("BEGIN; SET LOCAL ROLE chronofence_api");
      const countAs = async (tenantId: string) => {
        await c.query("SELECT set_config('app.tenant_id', $1, true)", [tenantId]);
        const found = await c.query("SELECT count(*)::int AS n FROM tasks WHERE id = $1", [
          created.body.id,
        ]);
        return found.rows[0].n as number;
      };
      const [asA, asB] = [await countAs(a.id), await countAs(b.id)];
      await c.query("SELECT set_config('app.tenant_id', '', true)");
      const asNobody = await c.query("SELECT count(*)::int AS n FROM tasks");
      await c.query("ROLLBACK");
      return { asA, asB, asNobody: asNobody.rows[0].n };
    });
    // A sees its own row (so the zeros are the policy's doing, not a query that finds nothing).
    expect(seen).toEqual({ asA: 1, asB: 0, asNobody: 0 });
  });
});

describe("metrics", () => {
  it("exposes requests by route and status, commit batch sizes and latency", async () => {
    const res = await call(api.baseUrl, "GET", "/metrics");
    expect(res.status).toBe(200);
    expect(res.body).toContain('cf_http_requests_total{route="POST /v1/tasks",status="201"}');
    expect(res.body).toContain("cf_group_commit_rows_bucket");
    expect(res.body).toContain("cf_group_commit_duration_seconds_bucket");
    expect(res.body).toContain("cf_rate_limited_requests_total");
  });
});
