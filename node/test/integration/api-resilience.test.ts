/**
 * Dependencies that are down or slow: the API answers 503 and writes nothing,
 * never hangs, never crashes; and SIGTERM-style shutdown lets in-flight
 * requests finish.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Config } from "../../src/config/config.js";
import {
  call,
  startTenantFixture,
  startTestApi,
  type TestApi,
  type TestTenant,
} from "./support/api.js";
import { gateProxy } from "./support/gate-proxy.js";
import { type TestDatabase, testConfig, withPg } from "./support/services.js";

let db: TestDatabase;
let tenant: TestTenant;
const running: TestApi[] = [];

beforeAll(async () => {
  ({ db, tenant } = await startTenantFixture());
});

afterAll(async () => {
  await Promise.all(running.map((api) => api.stop()));
  await db?.drop();
});

async function start(overrides: Partial<Config>): Promise<TestApi> {
  const api = await startTestApi(testConfig(db.url, overrides));
  running.push(api);
  return api;
}

/** Holds an exclusive lock on tasks until release() — inserts and reads block. */
async function lockTasks(): Promise<{ release: () => Promise<void> }> {
  const pg = await import("pg");
  const client = new pg.default.Client({ connectionString: db.url });
  await client.connect();
  await client.query("BEGIN; LOCK TABLE tasks IN ACCESS EXCLUSIVE MODE");
  return {
    release: async () => {
      await client.query("ROLLBACK");
      await client.end();
    },
  };
}

const waitingOnLock = () =>
  withPg(
    db.url,
    async (c) =>
      (
        await c.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
      ).rows[0].n,
  );

describe("Postgres down", () => {
  it("answers 503 and reports not ready, then serves again", async () => {
    // The API reaches Postgres through a proxy the test shuts (connections refused, as when
    // the server is down) and opens again; the shared server itself is never touched.
    const target = new URL(db.url);
    const proxy = await gateProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const viaProxy = new URL(db.url);
    viaProxy.port = String(proxy.port);
    try {
      await proxy.shut();
      const api = await start({ databaseUrl: viaProxy.toString(), pgConnectTimeoutMs: 500 });
      const post = () =>
        call(api.baseUrl, "POST", "/v1/tasks", { key: tenant.apiKey, body: { type: "a" } });
      const res = await post();
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe("unavailable");
      const ready = await call(api.baseUrl, "GET", "/readyz");
      expect(ready.status).toBe(503);
      expect(ready.body.checks.postgres).toBe("unavailable");
      expect((await call(api.baseUrl, "GET", "/healthz")).status).toBe(200);

      await proxy.open();
      // Serves again without a restart: the first request after Postgres is back may still
      // meet a connection attempt that began while it was away.
      await expect.poll(async () => (await post()).status, { timeout: 20_000 }).toBe(201);
      const back = await call(api.baseUrl, "GET", "/readyz");
      expect(back.status).toBe(200);
      expect(back.body.checks).toEqual({ postgres: "ok", redis: "ok" });
      const answer = await post();
      expect(answer.status).toBe(201);
      const stored = await withPg(db.url, (c) =>
        c.query("SELECT status FROM tasks WHERE id = $1", [answer.body.id]),
      );
      expect(stored.rows).toEqual([{ status: "SCHEDULED" }]);
    } finally {
      await proxy.close();
    }
  });
});

describe("Postgres slow", () => {
  it("answers 503 when a statement times out, and 201 once Postgres is back", async () => {
    const api = await start({ pgStatementTimeoutMs: 300, requestTimeoutMs: 5000 });
    const post = () =>
      call(api.baseUrl, "POST", "/v1/tasks", { key: tenant.apiKey, body: { type: "a" } });
    expect((await post()).status).toBe(201); // warms the key cache before the lock
    const lock = await lockTasks();
    try {
      const res = await post();
      expect(res.status).toBe(503);
    } finally {
      await lock.release();
    }
    expect((await post()).status).toBe(201);
  });

  it("answers 503 at the request deadline even if Postgres never answers", async () => {
    const REQUEST_TIMEOUT_MS = 1000;
    const STATEMENT_TIMEOUT_MS = 30_000;
    const api = await start({
      pgStatementTimeoutMs: STATEMENT_TIMEOUT_MS,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
    });
    const get = () => call(api.baseUrl, "GET", "/v1/tasks", { key: tenant.apiKey });
    // Warm the key cache and the pool first: on a loaded machine a cold request (a key
    // lookup, a new connection assuming its role) may itself outlast the deadline.
    await expect.poll(async () => (await get()).status, { timeout: 20_000 }).toBe(200);
    const lock = await lockTasks();
    try {
      const sentAtMs = performance.now();
      const res = await get();
      const tookMs = performance.now() - sentAtMs;
      expect(res.status).toBe(503);
      expect(res.body.error.message).toMatch(/timed out/);
      // The deadline answered, not the statement timeout (which never came).
      expect(tookMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
      expect(tookMs).toBeLessThan(STATEMENT_TIMEOUT_MS);
      expect(await waitingOnLock()).toBeGreaterThan(0);
    } finally {
      await lock.release();
    }
  });
});

describe("Redis down", () => {
  it("answers 503 to submissions and writes nothing, still serves reads, and is not ready", async () => {
    const api = await start({ redisUrl: "redis://127.0.0.1:1", redisCommandTimeoutMs: 200 });
    const countTasks = async () =>
      Number((await withPg(db.url, (c) => c.query("SELECT count(*) AS n FROM tasks"))).rows[0].n);
    const before = await countTasks();
    const single = await call(api.baseUrl, "POST", "/v1/tasks", {
      key: tenant.apiKey,
      body: { type: "a" },
    });
    expect(single.status).toBe(503);
    expect(single.body.error.code).toBe("unavailable");
    const batch = await call(api.baseUrl, "POST", "/v1/tasks/batch", {
      key: tenant.apiKey,
      body: { tasks: [{ type: "a" }] },
    });
    expect(batch.status).toBe(503);
    expect(await countTasks()).toBe(before);
    const list = await call(api.baseUrl, "GET", "/v1/tasks", { key: tenant.apiKey });
    expect(list.status).toBe(200);
    const ready = await call(api.baseUrl, "GET", "/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body.checks).toEqual({ postgres: "ok", redis: "unavailable" });
  });
});

describe("graceful shutdown", () => {
  it("finishes an in-flight request before closing", async () => {
    const api = await startTestApi(testConfig(db.url));
    const post = () =>
      call(api.baseUrl, "POST", "/v1/tasks", { key: tenant.apiKey, body: { type: "a" } });
    expect((await post()).status).toBe(201);
    const lock = await lockTasks();
    const inFlight = post();
    await expect.poll(waitingOnLock).toBeGreaterThan(0);
    const stopped = api.stop();
    await lock.release();
    const res = await inFlight;
    expect(res.status).toBe(201);
    await stopped;
    await expect(post()).rejects.toThrow();
    const stored = await withPg(db.url, (c) =>
      c.query("SELECT 1 FROM tasks WHERE id = $1", [res.body.id]),
    );
    expect(stored.rowCount).toBe(1);
  });
});
