/**
 * The fenced worker protocol over HTTP (POST /v1/executions/{id}/start|
 * heartbeat|complete|fail) and POST /v1/tasks/{id}/replay, on both backends
 * (support/api.ts): real Postgres and Redis, and the embedded default. A task is ARMED here by one UPDATE that does what a dispatcher's
 * arm does to the row (a new token from fencing_token_seq); the dispatcher
 * itself is tested in dispatch.test.ts.
 */
import { randomUUID } from "node:crypto";
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
  fixture = await startApiFixture({}, { maxPayloadBytes: 1024 });
  ({ api, tenant: a } = fixture);
  b = await fixture.newTenant();
});

afterAll(async () => {
  await fixture?.stop();
});

const withDb = <T>(fn: (c: Queryable) => Promise<T>) => fixture.withDb(fn);

const exec = (key: string, id: string, action: string, body: unknown) =>
  call(api.baseUrl, "POST", `/v1/executions/${id}/${action}`, { key, body });
const rowOf = (id: string) =>
  withDb(async (c) => (await c.query("SELECT * FROM tasks WHERE id = $1", [id])).rows[0]);

interface Armed {
  id: string;
  token: string;
  runAt: string;
}

/** Submits a task and arms it as a dispatcher would: ARMED, with a fresh fencing token. */
async function armedTask(task: Record<string, unknown> = {}): Promise<Armed> {
  const created = await call(api.baseUrl, "POST", "/v1/tasks", {
    key: a.apiKey,
    body: { type: "report.build", payload: { n: 1 }, delay_ms: 0, ...task },
  });
  expect(created.status).toBe(201);
  return withDb(async (c) => {
    const armed = await c.query(
      `UPDATE tasks SET status = 'ARMED', fencing_token = nextval('fencing_token_seq'),
              armed_at = now(), updated_at = now()
        WHERE id = $1 RETURNING fencing_token::text AS token, run_at`,
      [created.body.id],
    );
    const row = armed.rows[0];
    return { id: created.body.id, token: row.token, runAt: row.run_at.toISOString() };
  });
}

async function started(task: Record<string, unknown> = {}): Promise<Armed> {
  const armed = await armedTask(task);
  const res = await exec(a.apiKey, armed.id, "start", {
    fencing_token: armed.token,
    worker_id: "w1",
  });
  expect(res.status).toBe(200);
  return armed;
}

describe("start", () => {
  it("moves an ARMED task to RUNNING under the caller's worker id and lease", async () => {
    const t = await armedTask();
    const beforeMs = Date.now();
    const res = await exec(a.apiKey, t.id, "start", {
      fencing_token: t.token,
      worker_id: "py-worker-7",
      lease_ms: 5000,
      run_at: t.runAt,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      task_id: t.id,
      status: "RUNNING",
      attempt: 1,
      max_attempts: 3,
      run_at: t.runAt,
    });
    const leaseMs = Date.parse(res.body.lease_expires_at) - beforeMs;
    expect(leaseMs).toBeGreaterThanOrEqual(5000);
    expect(leaseMs).toBeLessThan(5000 + 60_000);
    const row = await rowOf(t.id);
    expect(row).toMatchObject({ status: "RUNNING", lease_owner: "py-worker-7", attempt: 1 });
    expect(row.started_at).not.toBeNull();
  });

  it("works without run_at (the store looks in every partition)", async () => {
    const t = await armedTask();
    const res = await exec(a.apiKey, t.id, "start", { fencing_token: t.token, worker_id: "w" });
    expect(res.status).toBe(200);
    expect(res.body.run_at).toBe(t.runAt);
  });

  it("answers a second start of the same attempt (a duplicate delivery) with 409", async () => {
    const t = await started();
    const again = await exec(a.apiKey, t.id, "start", { fencing_token: t.token, worker_id: "w2" });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({
      code: "invalid_transition",
      details: { task_id: t.id, reason: "stale_fencing_token" },
    });
    expect((await rowOf(t.id)).lease_owner).toBe("w1");
  });

  it("answers an older token with 409 and changes nothing", async () => {
    const t = await armedTask();
    const older = String(BigInt(t.token) - 1n);
    const res = await exec(a.apiKey, t.id, "start", { fencing_token: older, worker_id: "zombie" });
    expect(res.status).toBe(409);
    expect(res.body.error.details.reason).toBe("stale_fencing_token");
    expect(await rowOf(t.id)).toMatchObject({ status: "ARMED", lease_owner: null, attempt: 0 });
  });

  it("answers a cancelled task's start with 409", async () => {
    const t = await armedTask({ delay_ms: 60_000 });
    await withDb((c) =>
      c.query("UPDATE tasks SET status = 'CANCELLED', cancelled_at = now() WHERE id = $1", [t.id]),
    );
    const res = await exec(a.apiKey, t.id, "start", { fencing_token: t.token, worker_id: "w" });
    expect(res.status).toBe(409);
  });
});

describe("heartbeat", () => {
  it("extends the lease of the current attempt", async () => {
    const t = await started();
    const before = await rowOf(t.id);
    const res = await exec(a.apiKey, t.id, "heartbeat", {
      fencing_token: t.token,
      worker_id: "w1",
      lease_ms: 600_000,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ task_id: t.id, status: "RUNNING" });
    const after = await rowOf(t.id);
    expect(after.lease_expires_at.getTime()).toBeGreaterThan(before.lease_expires_at.getTime());
    expect(Date.parse(res.body.lease_expires_at)).toBe(after.lease_expires_at.getTime());
  });

  it("answers 409 for a token that is not current, and for a task not running", async () => {
    const t = await started();
    const older = String(BigInt(t.token) - 1n);
    expect(
      (await exec(a.apiKey, t.id, "heartbeat", { fencing_token: older, worker_id: "w1" })).status,
    ).toBe(409);
    const armed = await armedTask();
    expect(
      (await exec(a.apiKey, armed.id, "heartbeat", { fencing_token: armed.token, worker_id: "w" }))
        .status,
    ).toBe(409);
  });
});

describe("complete", () => {
  it("commits the result once; a second commit of the same attempt is 409", async () => {
    const t = await started();
    const body = { fencing_token: t.token, worker_id: "w1", result: { rows: 42 } };
    const res = await exec(a.apiKey, t.id, "complete", body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ task_id: t.id, status: "COMPLETED" });
    const row = await rowOf(t.id);
    expect(row).toMatchObject({ status: "COMPLETED", result: { rows: 42 } });
    expect(row.completed_at).not.toBeNull();

    const again = await exec(a.apiKey, t.id, "complete", { ...body, result: { rows: 0 } });
    expect(again.status).toBe(409);
    expect((await rowOf(t.id)).result).toEqual({ rows: 42 });
    const task = await call(api.baseUrl, "GET", `/v1/tasks/${t.id}`, { key: a.apiKey });
    expect(task.body).toMatchObject({ status: "COMPLETED", result: { rows: 42 }, attempt: 1 });
  });

  it("stores no result as JSON null", async () => {
    const t = await started();
    const res = await exec(a.apiKey, t.id, "complete", { fencing_token: t.token, worker_id: "w1" });
    expect(res.status).toBe(200);
    expect((await rowOf(t.id)).result).toBeNull();
  });

  it("refuses a zombie's commit after the task was taken over with a newer token", async () => {
    const t = await started();
    // What the reconciler does when the lease expired: a new token, the attempt retried.
    const taken = await withDb(async (c) => {
      const r = await c.query(
        `UPDATE tasks SET status = 'ARMED', fencing_token = nextval('fencing_token_seq')
          WHERE id = $1 RETURNING fencing_token::text AS token`,
        [t.id],
      );
      return r.rows[0].token as string;
    });
    const next = await exec(a.apiKey, t.id, "start", { fencing_token: taken, worker_id: "w2" });
    expect(next.status).toBe(200);
    expect(next.body.attempt).toBe(2);
    const zombie = await exec(a.apiKey, t.id, "complete", {
      fencing_token: t.token,
      worker_id: "w1",
      result: "zombie",
    });
    expect(zombie.status).toBe(409);
    const done = await exec(a.apiKey, t.id, "complete", {
      fencing_token: taken,
      worker_id: "w2",
      result: "fresh",
    });
    expect(done.status).toBe(200);
    expect((await rowOf(t.id)).result).toBe("fresh");
  });

  it("refuses a result over the tenant's payload limit (413) or that jsonb cannot hold (422)", async () => {
    const t = await started();
    const big = await exec(a.apiKey, t.id, "complete", {
      fencing_token: t.token,
      worker_id: "w1",
      result: "x".repeat(2000),
    });
    expect(big.status).toBe(413);
    const nul = await exec(a.apiKey, t.id, "complete", {
      fencing_token: t.token,
      worker_id: "w1",
      result: { text: "a\u0000b" },
    });
    expect(nul.status).toBe(422);
    expect(nul.body.error.details).toMatchObject({ field: "result", rule: "unsupported_unicode" });
    expect((await rowOf(t.id)).status).toBe("RUNNING");
  });
});

describe("interrupt", () => {
  it("hands the task back due now, the attempt not counted; the token is spent", async () => {
    const t = await started({ max_attempts: 1 });
    const beforeMs = Date.now();
    const res = await exec(a.apiKey, t.id, "interrupt", {
      fencing_token: t.token,
      worker_id: "w1",
      message: "deploying",
    });
    expect(res.status).toBe(200);
    // Even its only attempt: an interrupted attempt is given back, not dead-lettered.
    expect(res.body).toMatchObject({ task_id: t.id, status: "SCHEDULED", attempt: 1 });
    expect(Date.parse(res.body.next_run_at)).toBeLessThanOrEqual(Date.now());
    expect(Date.parse(res.body.next_run_at)).toBeGreaterThanOrEqual(beforeMs - 1);
    const row = await rowOf(t.id);
    expect(row).toMatchObject({ status: "SCHEDULED", attempt: 0 });
    expect(row.last_error).toMatchObject({ message: "deploying", code: "worker_stopping" });
    const again = await exec(a.apiKey, t.id, "interrupt", {
      fencing_token: t.token,
      worker_id: "w1",
    });
    expect(again.status).toBe(409);
    expect(again.body.error.details.reason).toBe("stale_fencing_token");
  });
});

describe("fail", () => {
  it("schedules a retryable failure again with a new token while attempts remain", async () => {
    const t = await started({ max_attempts: 3, backoff: { base_ms: 1000, max_ms: 2000 } });
    const beforeMs = Date.now();
    const res = await exec(a.apiKey, t.id, "fail", {
      fencing_token: t.token,
      worker_id: "w1",
      error: { message: "upstream 503", code: "http_503", details: { body: "busy" } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ task_id: t.id, status: "SCHEDULED", attempt: 1 });
    const delayMs = Date.parse(res.body.next_run_at) - beforeMs;
    expect(delayMs).toBeGreaterThanOrEqual(0);
    expect(delayMs).toBeLessThanOrEqual(2000 + 60_000);
    const row = await rowOf(t.id);
    expect(row.status).toBe("SCHEDULED");
    expect(BigInt(row.fencing_token)).toBeGreaterThan(BigInt(t.token));
    expect(row.last_error).toMatchObject({ message: "upstream 503", code: "http_503" });
    // The failed attempt's token is spent.
    const late = await exec(a.apiKey, t.id, "complete", {
      fencing_token: t.token,
      worker_id: "w1",
    });
    expect(late.status).toBe(409);
  });

  it("puts a retry due within the hot window into its shard, as the Node worker does", async () => {
    const t = await started({ max_attempts: 3, backoff: { base_ms: 1000, max_ms: 2000 } });
    const task = { tenantId: a.id, id: t.id };
    // The submission's own add first, then none: only the retry may put it back.
    await fixture.untilDue(task);
    await fixture.takeDue(task);
    const res = await exec(a.apiKey, t.id, "fail", {
      fencing_token: t.token,
      worker_id: "w1",
      error: { message: "upstream 503" },
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("SCHEDULED");
    expect(await fixture.dueRunAtMs(task)).toBe(Date.parse(res.body.next_run_at));
  });

  it("makes a non-retryable failure DEAD at once, with a dead letter", async () => {
    const t = await started({ max_attempts: 5 });
    const res = await exec(a.apiKey, t.id, "fail", {
      fencing_token: t.token,
      worker_id: "w1",
      error: { message: "bad input", retryable: false },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ task_id: t.id, status: "DEAD", attempt: 1 });
    const letter = await withDb(
      async (c) =>
        (await c.query("SELECT * FROM dead_letters WHERE id = $1", [res.body.dead_letter_id]))
          .rows[0],
    );
    expect(letter).toMatchObject({ task_id: t.id, tenant_id: a.id, reason: "non_retryable" });
    expect(letter.error).toMatchObject({ message: "bad input", retryable: false });
  });

  it("answers 409 for a stale token", async () => {
    const t = await started();
    const older = String(BigInt(t.token) - 1n);
    const res = await exec(a.apiKey, t.id, "fail", {
      fencing_token: older,
      worker_id: "w1",
      error: { message: "x" },
    });
    expect(res.status).toBe(409);
    expect((await rowOf(t.id)).status).toBe("RUNNING");
  });
});

describe("tenancy and bad requests", () => {
  it("answers another tenant's task, an unknown id and a malformed id with 404", async () => {
    const t = await armedTask();
    for (const action of ["start", "heartbeat", "complete"]) {
      const res = await exec(b.apiKey, t.id, action, { fencing_token: t.token, worker_id: "w" });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe("not_found");
    }
    const fail = await exec(b.apiKey, t.id, "fail", {
      fencing_token: t.token,
      worker_id: "w",
      error: { message: "x" },
    });
    expect(fail.status).toBe(404);
    expect(await rowOf(t.id)).toMatchObject({ status: "ARMED", lease_owner: null });
    const body = { fencing_token: "1", worker_id: "w" };
    expect((await exec(a.apiKey, randomUUID(), "start", body)).status).toBe(404);
    expect((await exec(a.apiKey, "not-a-uuid", "start", body)).status).toBe(404);
  });

  it("answers malformed bodies with 400 and changes nothing", async () => {
    const t = await armedTask();
    const bad: unknown[] = [
      { worker_id: "w" },
      { fencing_token: t.token },
      { fencing_token: Number(t.token), worker_id: "w" },
      { fencing_token: "12a", worker_id: "w" },
      { fencing_token: t.token, worker_id: "" },
      { fencing_token: t.token, worker_id: "w", lease_ms: 10 },
      { fencing_token: t.token, worker_id: "w", run_at: "yesterday" },
      { fencing_token: t.token, worker_id: "w", surprise: true },
      [t.token],
    ];
    for (const body of bad) {
      const res = await exec(a.apiKey, t.id, "start", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
    }
    const notJson = await call(api.baseUrl, "POST", `/v1/executions/${t.id}/start`, {
      key: a.apiKey,
      rawBody: "{fencing_token:",
    });
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.code).toBe("invalid_json");
    const noError = await exec(a.apiKey, t.id, "fail", { fencing_token: t.token, worker_id: "w" });
    expect(noError.status).toBe(400);
    expect(await rowOf(t.id)).toMatchObject({ status: "ARMED", attempt: 0 });
  });

  it("answers 401 without a valid key", async () => {
    const t = await armedTask();
    const res = await exec("nope", t.id, "start", { fencing_token: t.token, worker_id: "w" });
    expect(res.status).toBe(401);
  });
});

describe("POST /v1/tasks/{id}/replay", () => {
  async function deadTask(): Promise<Armed> {
    const t = await started();
    const res = await exec(a.apiKey, t.id, "fail", {
      fencing_token: t.token,
      worker_id: "w1",
      error: { message: "no", retryable: false },
    });
    expect(res.body.status).toBe("DEAD");
    return t;
  }

  it("schedules a DEAD task again, due now, with a new token, and adds it to its shard", async () => {
    const t = await deadTask();
    const res = await call(api.baseUrl, "POST", `/v1/tasks/${t.id}/replay`, { key: a.apiKey });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: t.id, status: "SCHEDULED", attempt: 1 });
    const row = await rowOf(t.id);
    expect(row.status).toBe("SCHEDULED");
    expect(BigInt(row.fencing_token)).toBeGreaterThan(BigInt(t.token));
    expect(await fixture.dueRunAtMs({ tenantId: a.id, id: t.id })).not.toBeNull();
    const letters = await withDb(
      async (c) =>
        (await c.query("SELECT replayed_at FROM dead_letters WHERE task_id = $1", [t.id])).rows,
    );
    expect(letters).toHaveLength(1);
    expect(letters[0].replayed_at).not.toBeNull();
    // The replayed attempt is armed and started like any other: attempt 2.
    const rearmed = await withDb(async (c) => {
      const r = await c.query(
        `UPDATE tasks SET status = 'ARMED', fencing_token = nextval('fencing_token_seq')
          WHERE id = $1 RETURNING fencing_token::text AS token`,
        [t.id],
      );
      return r.rows[0].token as string;
    });
    const start = await exec(a.apiKey, t.id, "start", { fencing_token: rearmed, worker_id: "w" });
    expect(start.status).toBe(200);
    expect(start.body.attempt).toBe(2);
  });

  it("accepts {} as the body, refuses anything else with 400", async () => {
    const t = await deadTask();
    const path = `/v1/tasks/${t.id}/replay`;
    const odd = await call(api.baseUrl, "POST", path, { key: a.apiKey, body: { now: true } });
    expect(odd.status).toBe(400);
    expect((await rowOf(t.id)).status).toBe("DEAD");
    expect((await call(api.baseUrl, "POST", path, { key: a.apiKey, body: {} })).status).toBe(200);
  });

  it("answers 409 for a task that is not DEAD, naming its status", async () => {
    const t = await started();
    const res = await call(api.baseUrl, "POST", `/v1/tasks/${t.id}/replay`, { key: a.apiKey });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({
      code: "invalid_transition",
      details: { task_id: t.id, status: "RUNNING" },
    });
  });

  it("answers 404 for another tenant's dead task and for an unknown id", async () => {
    const t = await deadTask();
    const other = await call(api.baseUrl, "POST", `/v1/tasks/${t.id}/replay`, { key: b.apiKey });
    expect(other.status).toBe(404);
    expect((await rowOf(t.id)).status).toBe("DEAD");
    const unknown = await call(api.baseUrl, "POST", `/v1/tasks/${randomUUID()}/replay`, {
      key: a.apiKey,
    });
    expect(unknown.status).toBe(404);
  });
});
