/**
 * The dashboard's API on real Postgres and Redis (the API role in-process):
 * a task's history with every attempt (fencing token, error, result) and
 * its timeline; the search's filters and keyset pages; dead letters; the
 * workflow list; the tenant's stats, rates included (from the API node's
 * own report of what HTTP workers did); watchdog alert reports; the
 * operator's cluster view and its token; and that tenant B reads none of
 * tenant A's data through any of them. Every answer is parsed, strictly,
 * with the schema the OpenAPI document gives for it (dashboard-resources.ts):
 * a presenter that drifts from the document fails here. A task is ARMED here
 * by one UPDATE that does what a dispatcher's arm does (api-executions.test.ts
 * does too).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { z } from "zod";
import {
  AlertReported,
  ClusterResource,
  DeadLetterPage,
  ScheduleUpcoming,
  StatsResource,
  TaskHistoryResource,
  WorkflowPage,
} from "../../src/adapters/http/openapi/dashboard-resources.js";
import { TaskPage } from "../../src/adapters/http/openapi/resources.js";
import {
  type ApiFixture,
  call,
  newTenant,
  startApiFixture,
  type TestApi,
  type TestTenant,
} from "./support/api.js";
import { type TestDatabase, withPg } from "./support/services.js";

const ADMIN_TOKEN = "operator-token-for-tests-0123456789";

let fixture: ApiFixture;
let db: TestDatabase;
let api: TestApi;
let a: TestTenant;
let b: TestTenant;

beforeAll(async () => {
  fixture = await startApiFixture({ adminToken: ADMIN_TOKEN, nodeReportIntervalMs: 200 });
  ({ db, api, tenant: a } = fixture);
  b = await newTenant(api.config);
});

afterAll(async () => {
  await fixture?.stop();
});

/** The answer, checked against its documented schema (unknown or missing fields fail). */
const documented: Array<[RegExp, z.ZodType]> = [
  [/^\/v1\/stats$/, StatsResource],
  [/^\/v1\/tasks\/search/, TaskPage],
  [/^\/v1\/tasks\/[^/]+\/history$/, TaskHistoryResource],
  [/^\/v1\/dead-letters/, DeadLetterPage],
  [/^\/v1\/workflows(\?|$)/, WorkflowPage],
  [/^\/v1\/schedules\/[^/]+\/upcoming/, ScheduleUpcoming],
  [/^\/v1\/cluster$/, ClusterResource],
];
const get = async (key: string, path: string) => {
  const res = await call(api.baseUrl, "GET", path, { key });
  const schema = documented.find(([pattern]) => pattern.test(path))?.[1];
  if (!schema) throw new Error(`no documented answer for ${path}`);
  if (res.status === 200) schema.parse(res.body);
  return res;
};
const exec = (key: string, id: string, action: string, body: unknown) =>
  call(api.baseUrl, "POST", `/v1/executions/${id}/${action}`, { key, body });

async function submit(key: string, body: Record<string, unknown>): Promise<string> {
  const created = await call(api.baseUrl, "POST", "/v1/tasks", { key, body });
  expect(created.status).toBe(201);
  return created.body.id;
}

/** ARMED with a fresh token, as a dispatcher's arm leaves the row. */
async function arm(id: string): Promise<string> {
  return withPg(db.url, async (c) => {
    const armed = await c.query(
      `UPDATE tasks SET status = 'ARMED', fencing_token = nextval('fencing_token_seq'),
              armed_at = now(), updated_at = now()
        WHERE id = $1 RETURNING fencing_token::text AS token`,
      [id],
    );
    return armed.rows[0].token;
  });
}

async function startedBy(worker: string, id: string): Promise<string> {
  const token = await arm(id);
  const res = await exec(a.apiKey, id, "start", { fencing_token: token, worker_id: worker });
  expect(res.status).toBe(200);
  return token;
}

describe("task history", () => {
  it("lists every attempt with its token, worker, error and result, and the timeline", async () => {
    const id = await submit(a.apiKey, {
      type: "report.build",
      max_attempts: 3,
      backoff: { strategy: "fixed", base_ms: 1, max_ms: 1 },
    });
    const first = await startedBy("w-1", id);
    const failed = await exec(a.apiKey, id, "fail", {
      fencing_token: first,
      worker_id: "w-1",
      error: { message: "upstream said 503", code: "http_503", details: { body: "busy" } },
    });
    expect(failed.body.status).toBe("SCHEDULED");
    const second = await startedBy("w-2", id);
    const done = await exec(a.apiKey, id, "complete", {
      fencing_token: second,
      worker_id: "w-2",
      result: { pages: 12 },
    });
    expect(done.status).toBe(200);

    const history = await get(a.apiKey, `/v1/tasks/${id}/history`);
    expect(history.status).toBe(200);
    expect(history.body.task).toMatchObject({ id, status: "COMPLETED", attempt: 2 });
    expect(history.body.attempts).toEqual([
      expect.objectContaining({
        attempt: 1,
        outcome: "retried",
        fencing_token: first,
        worker_id: "w-1",
        error: expect.objectContaining({ message: "upstream said 503", code: "http_503" }),
      }),
      expect.objectContaining({
        attempt: 2,
        outcome: "completed",
        fencing_token: second,
        worker_id: "w-2",
        result: { pages: 12 },
        error: null,
      }),
    ]);
    // The details stay in last_error, not in the history.
    expect(history.body.attempts[0].error.details).toBeUndefined();
    expect(history.body.attempts[0].started_at).not.toBeNull();
    expect(history.body.attempts[0].ended_at).not.toBeNull();
    const stages = Object.fromEntries(
      history.body.timeline.map((s: { stage: string }) => [s.stage, s]),
    );
    expect(Object.keys(stages)).toEqual(["created", "armed", "published", "started", "finished"]);
    expect(stages.finished).toMatchObject({ outcome: "COMPLETED" });
    expect(stages.started.at).not.toBeNull();
    // The retry's arm and start, not the first attempt's; no dispatched_at from an HTTP worker.
    expect(Date.parse(stages.armed.at)).toBeGreaterThanOrEqual(
      Date.parse(history.body.attempts[0].ended_at),
    );
    expect(stages.published.at).toBeNull();
    expect(typeof stages.started.lateness_ms).toBe("number");
  });

  it("keeps a dead task's last attempt and its dead letter; 404 for another tenant", async () => {
    const id = await submit(a.apiKey, { type: "report.build", max_attempts: 1 });
    const token = await startedBy("w-3", id);
    const dead = await exec(a.apiKey, id, "fail", {
      fencing_token: token,
      worker_id: "w-3",
      error: { message: "bad input", retryable: false },
    });
    expect(dead.body.status).toBe("DEAD");
    const history = await get(a.apiKey, `/v1/tasks/${id}/history`);
    expect(history.body.attempts).toEqual([
      expect.objectContaining({ attempt: 1, outcome: "dead", fencing_token: token }),
    ]);
    expect(history.body.timeline.at(-1)).toMatchObject({ stage: "finished", outcome: "DEAD" });

    const letters = await get(a.apiKey, "/v1/dead-letters");
    expect(letters.body.dead_letters.map((d: { task_id: string }) => d.task_id)).toContain(id);
    const letter = letters.body.dead_letters.find((d: { task_id: string }) => d.task_id === id);
    expect(letter).toMatchObject({
      reason: "non_retryable",
      fencing_token: token,
      worker_id: "w-3",
      replayed_at: null,
    });
    expect(letter.error.message).toBe("bad input");

    expect((await get(b.apiKey, `/v1/tasks/${id}/history`)).status).toBe(404);
    expect((await get(b.apiKey, "/v1/dead-letters")).body.dead_letters).toEqual([]);
    expect((await get(a.apiKey, "/v1/tasks/not-a-uuid/history")).status).toBe(404);

    const replayed = await call(api.baseUrl, "POST", `/v1/tasks/${id}/replay`, { key: a.apiKey });
    expect(replayed.status).toBe(200);
    const open = await get(a.apiKey, "/v1/dead-letters");
    expect(open.body.dead_letters.map((d: { task_id: string }) => d.task_id)).not.toContain(id);
    const all = await get(a.apiKey, "/v1/dead-letters?open=false");
    const kept = all.body.dead_letters.find((d: { task_id: string }) => d.task_id === id);
    expect(kept.replayed_at).not.toBeNull();
  });
});

describe("task search", () => {
  it("filters by status, type, priority, run_at range, id and idempotency key; pages newest first", async () => {
    const tenant = await newTenant(api.config);
    const key = tenant.apiKey;
    const soon = Date.now() + 3_600_000;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(
        await submit(key, {
          type: i % 2 === 0 ? "even.job" : "odd.job",
          priority: i === 4 ? "critical" : "bulk",
          run_at: new Date(soon + i * 60_000).toISOString(),
          idempotency_key: `order-${i}`,
        }),
      );
    }
    const search = async (query: string) => {
      const res = await get(key, `/v1/tasks/search?${query}`);
      expect(res.status).toBe(200);
      return res.body;
    };
    expect((await search("")).tasks.map((t: { id: string }) => t.id)).toEqual([...ids].reverse());
    expect((await search("type=odd.job")).tasks.map((t: { id: string }) => t.id)).toEqual([
      ids[3],
      ids[1],
    ]);
    expect((await search("priority=critical")).tasks.map((t: { id: string }) => t.id)).toEqual([
      ids[4],
    ]);
    const from = encodeURIComponent(new Date(soon + 60_000).toISOString());
    const to = encodeURIComponent(new Date(soon + 3 * 60_000).toISOString());
    expect(
      (await search(`run_at_from=${from}&run_at_to=${to}`)).tasks.map((t: { id: string }) => t.id),
    ).toEqual([ids[2], ids[1]]);
    expect((await search(`id=${ids[2]}`)).tasks.map((t: { id: string }) => t.id)).toEqual([ids[2]]);
    expect(
      (await search("idempotency_key=order-3")).tasks.map((t: { id: string }) => t.id),
    ).toEqual([ids[3]]);
    expect((await search("status=SCHEDULED&type=even.job")).tasks).toHaveLength(3);
    expect((await search("status=RUNNING")).tasks).toEqual([]);

    const first = await search("limit=2");
    expect(first.tasks.map((t: { id: string }) => t.id)).toEqual([ids[4], ids[3]]);
    const second = await search(`limit=2&cursor=${first.next_cursor}`);
    expect(second.tasks.map((t: { id: string }) => t.id)).toEqual([ids[2], ids[1]]);
    const last = await search(`limit=2&cursor=${second.next_cursor}`);
    expect(last.tasks.map((t: { id: string }) => t.id)).toEqual([ids[0]]);
    expect(last.next_cursor).toBeNull();

    // Another tenant finds none of them, by any filter.
    const other = await get(b.apiKey, `/v1/tasks/search?id=${ids[0]}`);
    expect(other.body.tasks).toEqual([]);
    expect((await get(b.apiKey, "/v1/tasks/search?idempotency_key=order-1")).body.tasks).toEqual(
      [],
    );
  });

  it("refuses bad parameters with 400 naming the parameter", async () => {
    for (const [query, field] of [
      ["status=LATE", "status"],
      ["priority=urgent", "priority"],
      ["run_at_from=yesterday", "run_at_from"],
      ["id=123", "id"],
      ["limit=0", "limit"],
      ["limit=100000", "limit"],
      ["cursor=zzz", "cursor"],
      ["type=%00", "type"],
    ]) {
      const res = await get(a.apiKey, `/v1/tasks/search?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error).toMatchObject({ code: "invalid_request", details: { field } });
    }
    expect((await get(a.apiKey, "/v1/dead-letters?cursor=1~x")).status).toBe(400);
    expect((await get(a.apiKey, "/v1/dead-letters?open=maybe")).status).toBe(400);
  });
});

describe("stats", () => {
  it("counts by state and priority, overdue and dead letters; rates and lateness from the API node's report", async () => {
    const tenant = await newTenant(api.config, { graceMs: 1000 });
    const key = tenant.apiKey;
    const exec2 = (id: string, action: string, body: unknown) =>
      call(api.baseUrl, "POST", `/v1/executions/${id}/${action}`, { key, body });
    await submit(key, { type: "later", delay_ms: 3_600_000, priority: "bulk" });
    const overdue = await submit(key, { type: "now", priority: "critical" });
    const completed = await submit(key, { type: "now" });
    const dies = await submit(key, { type: "now", max_attempts: 1 });
    // An overdue task: due (long) before now minus the tenant's 1 s grace, never started.
    await withPg(db.url, (c) =>
      c.query("UPDATE tasks SET run_at = now() - interval '1 minute' WHERE id = $1", [overdue]),
    );
    for (const [id, action, body] of [
      [completed, "complete", { result: 1 }],
      [dies, "fail", { error: { message: "no", retryable: false } }],
    ] as const) {
      const token = await arm(id);
      expect((await exec2(id, "start", { fencing_token: token, worker_id: "w" })).status).toBe(200);
      expect(
        (await exec2(id, action, { fencing_token: token, worker_id: "w", ...body })).status,
      ).toBe(200);
    }

    // The API node reports every 200 ms; the stats cache answers for a second.
    let stats: Awaited<ReturnType<typeof get>>["body"];
    const deadline = Date.now() + 15_000;
    do {
      await new Promise((resolve) => setTimeout(resolve, 250));
      stats = (await get(key, "/v1/stats")).body;
    } while (stats.window.completed < 1 && Date.now() < deadline);
    const count = (status: string, priority: string) =>
      stats.counts.by_state.find(
        (c: { status: string; priority: string }) => c.status === status && c.priority === priority,
      )?.count ?? 0;
    expect(count("SCHEDULED", "bulk")).toBe(1);
    expect(count("SCHEDULED", "critical")).toBe(1);
    expect(count("COMPLETED", "standard")).toBe(1);
    expect(count("DEAD", "standard")).toBe(1);
    expect(stats.counts).toMatchObject({ counted_rows: 4, capped: false });
    expect(stats.overdue).toBe(1);
    expect(stats.open_dead_letters).toBe(1);
    expect(stats.window).toEqual({ completed: 1, failed: 1, dead: 1 });
    expect(stats.start_lateness.count).toBe(2);
    expect(stats.start_lateness.p50_ms).toBeGreaterThan(0);
    expect(stats.series).toHaveLength(30);

    // Tenant B's own stats show nothing of it.
    const other = (await get(b.apiKey, "/v1/stats")).body;
    expect(other.window.completed).toBe(0);
    expect(other.overdue).toBe(0);
  });
});

describe("workflows and schedules", () => {
  it("lists the tenant's workflows, newest first, and no other tenant's", async () => {
    const created: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await call(api.baseUrl, "POST", "/v1/workflows", {
        key: a.apiKey,
        body: {
          nodes: [
            { key: "a", type: "step", delay_ms: 3_600_000 },
            { key: "b", type: "step", depends_on: ["a"] },
          ],
        },
      });
      expect(res.status).toBe(201);
      created.push(res.body.id);
    }
    const page = await get(a.apiKey, "/v1/workflows?limit=2");
    expect(page.body.workflows.map((w: { id: string }) => w.id)).toEqual([created[2], created[1]]);
    expect(page.body.workflows[0]).toMatchObject({ status: "RUNNING", node_count: 2 });
    const next = await get(a.apiKey, `/v1/workflows?limit=2&cursor=${page.body.next_cursor}`);
    expect(next.body.workflows.map((w: { id: string }) => w.id)).toContain(created[0]);
    expect((await get(b.apiKey, "/v1/workflows")).body.workflows).toEqual([]);
  });

  it("gives a schedule's next five instants in its zone and its dead man's switch state", async () => {
    const res = await call(api.baseUrl, "POST", "/v1/schedules", {
      key: a.apiKey,
      body: {
        name: "nightly",
        expression: "30 2 * * *",
        time_zone: "Europe/Berlin",
        type: "nightly.job",
        expect_within_ms: 60_000,
      },
    });
    expect(res.status).toBe(201);
    const upcoming = await get(a.apiKey, `/v1/schedules/${res.body.id}/upcoming`);
    expect(upcoming.status).toBe(200);
    expect(upcoming.body.next).toHaveLength(5);
    for (const fire of upcoming.body.next) {
      // 02:30 local (03:00 on the day the clocks skip 02:00–03:00), with the zone's offset.
      expect(fire.local).toMatch(/T0(2:30|3:00):00\+0[12]:00$/);
      expect(Date.parse(fire.local)).toBe(Date.parse(fire.at));
    }
    expect(upcoming.body.dead_mans_switch).toEqual({ state: "ok", expect_within_ms: 60_000 });
    expect(
      (await get(a.apiKey, `/v1/schedules/${res.body.id}/upcoming?count=2`)).body.next,
    ).toHaveLength(2);
    expect((await get(b.apiKey, `/v1/schedules/${res.body.id}/upcoming`)).status).toBe(404);
    const paused = await call(api.baseUrl, "PATCH", `/v1/schedules/${res.body.id}`, {
      key: a.apiKey,
      body: { paused: true },
    });
    expect(paused.status).toBe(200);
    const after = await get(a.apiKey, `/v1/schedules/${res.body.id}/upcoming`);
    expect(after.body).toMatchObject({ paused: true, dead_mans_switch: { state: "paused" } });
  });
});

describe("watchdog alerts and the cluster view", () => {
  it("stores the watchdog's alerts for its tenant; the operator sees every tenant's", async () => {
    const report = async (key: string, body: unknown) => {
      const res = await call(api.baseUrl, "POST", "/v1/watchdog/alerts", { key, body });
      if (res.status === 200) AlertReported.parse(res.body);
      return res;
    };
    const firing = {
      key: "canary",
      kind: "canary",
      state: "firing",
      message: "canary task not COMPLETED within 120000 ms",
      details: { age_ms: 130_000 },
    };
    expect((await report(a.apiKey, firing)).status).toBe(200);
    const alerts = (await get(a.apiKey, "/v1/stats")).body.alerts;
    expect(alerts).toEqual([expect.objectContaining({ key: "canary", state: "firing" })]);
    expect((await report(a.apiKey, { ...firing, state: "resolved" })).status).toBe(200);
    expect((await report(a.apiKey, { ...firing, state: "loud" })).status).toBe(400);
    expect((await report(a.apiKey, { ...firing, extra: 1 })).status).toBe(400);
    expect((await report(a.apiKey, "[1]")).status).toBe(400);
    expect((await report("cfk_wrong", firing)).status).toBe(401);
    expect((await get(b.apiKey, "/v1/stats")).body.alerts).toEqual([]);

    const cluster = await get(ADMIN_TOKEN, "/v1/cluster");
    expect(cluster.status).toBe(200);
    expect(cluster.body.alerts).toEqual([
      expect.objectContaining({ tenant_id: a.id, key: "canary", state: "resolved" }),
    ]);
  });

  it("answers the cluster view only to the operator token", async () => {
    expect((await get(a.apiKey, "/v1/cluster")).status).toBe(401);
    expect((await get(`${ADMIN_TOKEN}x`, "/v1/cluster")).status).toBe(401);
    expect((await call(api.baseUrl, "GET", "/v1/cluster")).status).toBe(401);
    const view = await get(ADMIN_TOKEN, "/v1/cluster");
    expect(view.status).toBe(200);
    expect(view.body.nodes).toEqual(
      expect.arrayContaining([expect.objectContaining({ roles: ["api"], live: true })]),
    );
    expect(view.body.shards).toHaveLength(16);
    expect(view.body.shards[0]).toMatchObject({ shard: 0, owner: null, live: false });
    // The broker answers; no worker topics exist under this test's prefix yet.
    expect(view.body.kafka_lag).toEqual({ queues: [] });
  });
});
