/**
 * The typed client (`chronofence/client`) against the real API on real
 * Postgres and Redis. Every answer is parsed with the response schemas of
 * openapi/resources.ts, strictly: a presenter that drifts from what the
 * OpenAPI document (and the client's types) say fails here. Tasks are armed
 * by one UPDATE, as in api-executions.test.ts, to drive the worker protocol.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { z } from "zod";
import {
  WorkflowPage,
  WorkflowSummaryResource,
} from "../../src/adapters/http/openapi/dashboard-resources.js";
import {
  BatchItem,
  ExecutionCompleted,
  ExecutionExtended,
  ExecutionSettled,
  ExecutionStarted,
  ScheduleDeleted,
  SchedulePage,
  ScheduleResource,
  ScheduleUpdated,
  ScheduleView,
  TaskResource,
  WorkflowResource,
} from "../../src/adapters/http/openapi/resources.js";
import { ChronofenceApiError, ChronofenceClient } from "../../src/entries/client.js";
import { type ApiFixture, startApiFixture } from "./support/api.js";
import { withPg } from "./support/services.js";

let fixture: ApiFixture;
let client: ChronofenceClient;

beforeAll(async () => {
  fixture = await startApiFixture();
  client = new ChronofenceClient({ url: fixture.api.baseUrl, apiKey: fixture.tenant.apiKey });
});

afterAll(async () => {
  await fixture?.stop();
});

/** The answer, checked against its documented schema (unknown or missing fields fail). */
const strict = <T>(schema: z.ZodType<T>, value: unknown): T => schema.parse(value);

async function arm(taskId: string): Promise<string> {
  return withPg(fixture.db.url, async (c) => {
    const armed = await c.query(
      `UPDATE tasks SET status = 'ARMED', fencing_token = nextval('fencing_token_seq'),
              armed_at = now(), updated_at = now()
        WHERE id = $1 RETURNING fencing_token::text AS token`,
      [taskId],
    );
    return armed.rows[0].token as string;
  });
}

describe("ChronofenceClient tasks", () => {
  it("submits, replays an idempotency key, gets, and cancels once", async () => {
    const task = strict(
      TaskResource,
      await client.tasks.submit({ type: "client.one", payload: { n: 1 }, delay_ms: 60_000 }),
    );
    expect(task).toMatchObject({ type: "client.one", status: "SCHEDULED", payload: { n: 1 } });
    const keyed = { type: "client.key", idempotency_key: `k-${task.id}` };
    const first = await client.tasks.submit(keyed);
    expect((await client.tasks.submit(keyed)).id).toBe(first.id);
    expect(strict(TaskResource, await client.tasks.get(task.id))).toEqual(task);
    expect((await client.tasks.cancel(task.id)).status).toBe("CANCELLED");
    const again = await client.tasks.cancel(task.id).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(ChronofenceApiError);
    expect(again).toMatchObject({ status: 409, code: "invalid_transition" });
  });

  it("carries the API's status, code and details on errors", async () => {
    const missing = await client.tasks.get("0190a000-0000-7000-8000-000000000000").catch((e) => e);
    expect(missing).toMatchObject({ status: 404, code: "not_found" });
    const invalid = await client.tasks.submit({ type: "bad type" }).catch((e) => e);
    expect(invalid).toMatchObject({ status: 422, code: "unprocessable" });
    expect(invalid.details.issues[0].path).toBe("type");
    const stranger = new ChronofenceClient({ url: fixture.api.baseUrl, apiKey: "cfk_nobody" });
    await expect(stranger.tasks.get("x")).rejects.toMatchObject({
      status: 401,
      code: "unauthorized",
    });
  });

  it("submits a batch and lists every page with the async iterator", async () => {
    const items = await client.tasks.submitBatch(
      Array.from({ length: 5 }, (_, i) => ({ type: "client.batch", payload: { i } })),
    );
    expect(items).toHaveLength(5);
    for (const item of items) strict(BatchItem, item);
    const ids = items.map((item) => (item as { id: string }).id);
    const listed: string[] = [];
    for await (const t of client.tasks.list({ type: "client.batch", limit: 2 })) {
      strict(TaskResource, t);
      listed.push(t.id);
    }
    expect(listed).toEqual(ids);
  });

  it("follows changes in updated_at order (the change feed)", async () => {
    const before = new Date();
    const a = await client.tasks.submit({ type: "client.feed", delay_ms: 60_000 });
    const b = await client.tasks.submit({ type: "client.feed", delay_ms: 60_000 });
    await client.tasks.cancel(a.id);
    const changed: Array<[string, string]> = [];
    const filter = {
      order: "updated_at",
      updatedAfter: before,
      type: "client.feed",
      limit: 1,
    } as const;
    for await (const t of client.tasks.list(filter)) changed.push([t.id, t.status]);
    expect(changed).toEqual([
      [b.id, "SCHEDULED"],
      [a.id, "CANCELLED"],
    ]);
    const later = (await client.tasks.get(a.id)).updated_at;
    const after: string[] = [];
    for await (const t of client.tasks.list({ ...filter, updatedAfter: later })) after.push(t.id);
    expect(after).toEqual([]);
  });
});

describe("ChronofenceClient executions", () => {
  it("starts, heartbeats, fails to DEAD, replays, and completes", async () => {
    const task = await client.tasks.submit({ type: "client.exec", max_attempts: 1 });
    let token = await arm(task.id);
    const attempt = { fencing_token: token, worker_id: "client-test" };
    strict(ExecutionStarted, await client.executions.start(task.id, attempt));
    strict(
      ExecutionExtended,
      await client.executions.heartbeat(task.id, { ...attempt, lease_ms: 5000 }),
    );
    const dead = strict(
      ExecutionSettled,
      await client.executions.fail(task.id, {
        ...attempt,
        error: { message: "no", retryable: false },
      }),
    );
    expect(dead.status).toBe("DEAD");
    const stale = await client.executions.complete(task.id, attempt).catch((e) => e);
    expect(stale).toMatchObject({ status: 409, details: { reason: "stale_fencing_token" } });
    expect(strict(TaskResource, await client.tasks.replay(task.id)).status).toBe("SCHEDULED");
    token = await arm(task.id);
    await client.executions.start(task.id, { fencing_token: token, worker_id: "w2" });
    const done = await client.executions.complete(task.id, {
      fencing_token: token,
      worker_id: "w2",
      result: { ok: true },
    });
    strict(ExecutionCompleted, done);
    expect((await client.tasks.get(task.id)).result).toEqual({ ok: true });
  });

  it("interrupts an attempt: due again at once", async () => {
    const task = await client.tasks.submit({ type: "client.stop" });
    const token = await arm(task.id);
    await client.executions.start(task.id, { fencing_token: token, worker_id: "w" });
    const settled = await client.executions.interrupt(task.id, {
      fencing_token: token,
      worker_id: "w",
    });
    expect(strict(ExecutionSettled, settled).status).toBe("SCHEDULED");
  });
});

describe("ChronofenceClient workflows and schedules", () => {
  it("submits, gets and cancels a workflow", async () => {
    const submitted = strict(
      WorkflowResource,
      await client.workflows.submit({
        nodes: [
          { key: "a", type: "client.wf", delay_ms: 60_000 },
          { key: "b", type: "client.wf", depends_on: ["a"], trigger_rule: "all_done" },
        ],
      }),
    );
    expect(submitted.nodes.map((n) => n.status)).toEqual(["SCHEDULED", "WAITING"]);
    expect(strict(WorkflowResource, await client.workflows.get(submitted.id)).id).toBe(
      submitted.id,
    );
    expect(strict(WorkflowResource, await client.workflows.cancel(submitted.id)).status).toBe(
      "CANCELLED",
    );
  });

  it("lists every workflow, newest first, page after page", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const nodes = [{ key: "only", type: "client.wf-list", delay_ms: 60_000 }];
      ids.push((await client.workflows.submit({ nodes })).id);
    }
    const first = strict(WorkflowPage, await client.workflows.page({ limit: 2 }));
    expect(first.workflows.map((w) => w.id)).toEqual([ids[2], ids[1]]);
    expect(first.next_cursor).not.toBeNull();
    const listed: string[] = [];
    for await (const w of client.workflows.list({ limit: 1 })) {
      listed.push(strict(WorkflowSummaryResource, w).id);
    }
    // One page a workflow: the iterator followed every cursor, and saw each once.
    expect(listed.filter((id) => ids.includes(id))).toEqual([...ids].reverse());
    expect(new Set(listed).size).toBe(listed.length);
    await expect(client.workflows.page({ limit: 0 })).rejects.toMatchObject({
      status: 400,
      code: "invalid_request",
    });
  });

  it("creates, lists, gets, pauses, resumes, updates and deletes a schedule", async () => {
    const created = strict(
      ScheduleResource,
      await client.schedules.create({
        name: "client-s",
        expression: "@daily",
        type: "client.cron",
      }),
    );
    const other = await client.schedules.create({
      name: "client-s2",
      expression: "@hourly",
      type: "client.cron",
    });
    const page = strict(SchedulePage, await client.schedules.page({ limit: 1 }));
    expect(page.schedules).toHaveLength(1);
    expect(page.next_cursor).not.toBeNull();
    const listed: string[] = [];
    for await (const s of client.schedules.list({ limit: 1 }))
      listed.push(strict(ScheduleResource, s).id);
    expect(listed).toEqual(expect.arrayContaining([created.id, other.id]));
    expect(new Set(listed).size).toBe(listed.length);
    await client.schedules.delete(other.id);
    strict(ScheduleView, await client.schedules.get(created.id, { history: 5 }));
    expect(strict(ScheduleUpdated, await client.schedules.pause(created.id)).paused).toBe(true);
    expect((await client.schedules.resume(created.id)).paused).toBe(false);
    expect((await client.schedules.update(created.id, { jitter_ms: 10 })).jitter_ms).toBe(10);
    strict(ScheduleDeleted, await client.schedules.delete(created.id));
    await expect(client.schedules.get(created.id)).rejects.toMatchObject({ status: 404 });
  });
});

describe("the change feed's bound", () => {
  it("looks only at the tenant's newest tasks (windowTasks), whatever the position", async () => {
    const { createPgPool } = await import("../../src/adapters/pg/pool.js");
    const { PgTaskStore } = await import("../../src/adapters/pg/task-store.js");
    const pool = createPgPool({
      connectionString: fixture.db.url,
      maxConnections: 1,
      statementTimeoutMs: 10_000,
      connectTimeoutMs: 3000,
      role: null,
      applicationName: "feed-bound-test",
      onError: () => undefined,
    });
    try {
      const store = new PgTaskStore(pool);
      const ids: string[] = [];
      for (let i = 0; i < 4; i++)
        ids.push((await client.tasks.submit({ type: "client.bound" })).id);
      // The oldest one changes last: outside a window of the 2 newest, it is not seen.
      await client.tasks.cancel(ids[0]!);
      const changes = (windowTasks: number) =>
        store.list(fixture.tenant.id, {
          type: "client.bound",
          limit: 100,
          changes: {
            after: { updatedAtMs: 0, id: "00000000-0000-0000-0000-000000000000" },
            windowTasks,
          },
        });
      expect((await changes(2)).map((t) => t.id)).toEqual([ids[2], ids[3]]);
      expect((await changes(100)).map((t) => t.id).at(-1)).toBe(ids[0]);
    } finally {
      await pool.end();
    }
  });
});
