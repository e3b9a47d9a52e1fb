/**
 * The whole pipeline in-process on the real Postgres, Redis and Kafka: API →
 * dispatch roles → worker. Each task runs once, at or after its run_at, for
 * every priority; failures retry with backoff and then succeed, or end DEAD
 * with a dead letter (exhausted or non-retryable); a replayed dead task runs
 * again; the http handler POSTs with its fencing headers and times out.
 */

import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { threadId } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { PgExecutionStore } from "../../src/adapters/pg/execution-store.js";
import type { PgPool } from "../../src/adapters/pg/pool.js";
import { call, type TestTenant } from "./support/api.js";
import { requireKafka } from "./support/kafka.js";
import { type Pipeline, startPipeline } from "./support/pipeline.js";
import { testPool, withPg } from "./support/services.js";

// Waits are event-driven but a loaded 2-core machine can make the pipeline slow.
vi.setConfig({ testTimeout: 120_000 });

let fixture: Pipeline;
let tenant: TestTenant;
let pool: PgPool;
/** Every call of the `count` handler: task id → attempts seen. */
const runs = new Map<string, number[]>();
/** Each run of the `hold` handler waits until the test lets that task go (its own promise). */
const holds = new Map<string, () => void>();
const releaseHold = (taskId: string) => holds.get(taskId)?.();
/**
 * The reconciler sends a task armed and not started this long after its run_at
 * back to be armed and published again: a task held up in a stuck queue gets
 * through that way, so a test of the queue must see it run before that.
 */
const DISPATCH_TIMEOUT_MS = 20_000;

beforeAll(async () => {
  await requireKafka();
  fixture = await startPipeline(
    "worker",
    {
      reconcileIntervalMs: 500,
      workerLeaseMs: 3000,
      workerHeartbeatMs: 500,
      // The http handler's test endpoint is on loopback, which it refuses unless allowed.
      httpHandlerAllow: "127.0.0.1/32",
      dispatchTimeoutMs: DISPATCH_TIMEOUT_MS,
      workerHandlers: fileURLToPath(new URL("./support/user-handlers.mjs", import.meta.url)),
    },
    {
      worker: {
        register: (registry) =>
          registry
            .register("count", async (_payload, ctx) => {
              runs.set(ctx.taskId, [...(runs.get(ctx.taskId) ?? []), ctx.attempt]);
              return { attempt: ctx.attempt };
            })
            .register("hold", async (_payload, ctx) => {
              await new Promise<void>((resolve) => holds.set(ctx.taskId, resolve));
              return {};
            }),
      },
    },
  );
  ({ tenant } = fixture);
  pool = testPool(fixture.db.url, "worker-test");
});

afterAll(async () => {
  for (const release of holds.values()) release(); // a failed test must not hold the worker's stop
  await pool?.end();
  await fixture?.stop();
});

async function submit(body: Record<string, unknown>): Promise<{ id: string; runAtMs: number }> {
  const answer = await call(fixture.api.baseUrl, "POST", "/v1/tasks", {
    key: tenant.apiKey,
    body,
  });
  expect(answer.status).toBe(201);
  return { id: answer.body.id, runAtMs: Date.parse(answer.body.run_at) };
}

interface Row {
  status: string;
  attempt: number;
  result: unknown;
  last_error: { code?: string; message: string } | null;
  started_ms: number;
  run_at_ms: number;
}

const rowOf = (id: string): Promise<Row> =>
  withPg(
    fixture.db.url,
    async (c) =>
      (
        await c.query(
          `SELECT status, attempt, result, last_error,
                  (extract(epoch FROM started_at) * 1000)::float8 AS started_ms,
                  (extract(epoch FROM run_at) * 1000)::float8 AS run_at_ms
             FROM tasks WHERE id = $1`,
          [id],
        )
      ).rows[0],
  );

const settled = (id: string, timeoutMs = 60_000) =>
  expect
    .poll(async () => (await rowOf(id)).status, { timeout: timeoutMs, interval: 100 })
    .toMatch(/^(COMPLETED|DEAD)$/);

const deadLetters = (id: string) =>
  withPg(
    fixture.db.url,
    async (c) =>
      (
        await c.query(
          "SELECT reason, attempt, error FROM dead_letters WHERE task_id = $1 ORDER BY dead_at",
          [id],
        )
      ).rows,
  );

describe("worker", () => {
  it("runs each task once, not before its run_at, for every priority", async () => {
    const tasks = await Promise.all(
      (["critical", "standard", "bulk"] as const).flatMap((priority, p) =>
        [0, 1, 2].map((i) =>
          submit({ type: "count", priority, delay_ms: 1000 + p * 100 + i * 37 }),
        ),
      ),
    );
    for (const task of tasks) await settled(task.id);
    for (const task of tasks) {
      const row = await rowOf(task.id);
      expect(row).toMatchObject({ status: "COMPLETED", attempt: 1, result: { attempt: 1 } });
      expect(row.started_ms).toBeGreaterThanOrEqual(task.runAtMs);
      expect(runs.get(task.id)).toEqual([1]);
    }
  });

  it("a task still running holds up none of the tasks behind it in its queue", async () => {
    // Same tenant and priority: the same partition, fetched after the held one.
    const slow = await submit({ type: "hold", delay_ms: 300, timeout_ms: 60_000 });
    await expect
      .poll(async () => (await rowOf(slow.id)).status, { timeout: 30_000 })
      .toBe("RUNNING");
    const behind = await Promise.all(
      [0, 1, 2, 3, 4].map((i) => submit({ type: "count", delay_ms: 200 + i })),
    );
    // A queue held up by the running task lets them through only when the reconciler re-arms
    // them, a dispatch timeout after their run_at, and publishes them again (that was the
    // bug, seen at about 10 s): each must settle before that. Here they run in about 1 s.
    for (const task of behind) {
      await settled(task.id, task.runAtMs + DISPATCH_TIMEOUT_MS - Date.now());
    }
    expect((await rowOf(slow.id)).status).toBe("RUNNING");
    releaseHold(slow.id);
    await settled(slow.id);
    expect((await rowOf(slow.id)).status).toBe("COMPLETED");
  });

  it("retries with backoff, then succeeds", async () => {
    const task = await submit({
      type: "fail",
      payload: { fail_attempts: 2, message: "flaky" },
      max_attempts: 5,
      backoff: { base_ms: 200, max_ms: 1000 },
    });
    await settled(task.id);
    const row = await rowOf(task.id);
    expect(row).toMatchObject({ status: "COMPLETED", attempt: 3, result: { attempt: 3 } });
    expect(row.last_error).toMatchObject({ message: "flaky", retryable: true });
    // The third run_at is at least the two backoffs (≥ 100 ms, then ≥ 200 ms) after the first.
    expect(row.run_at_ms - task.runAtMs).toBeGreaterThanOrEqual(300);
    expect(await deadLetters(task.id)).toEqual([]);
  });

  it("dead-letters a task whose attempts are exhausted", async () => {
    const task = await submit({
      type: "fail",
      payload: { message: "always", code: "E_ALWAYS" },
      max_attempts: 2,
      backoff: { base_ms: 100, max_ms: 100 },
    });
    await settled(task.id);
    expect(await rowOf(task.id)).toMatchObject({ status: "DEAD", attempt: 2 });
    expect(await deadLetters(task.id)).toMatchObject([
      { reason: "exhausted", attempt: 2, error: { message: "always", code: "E_ALWAYS" } },
    ]);
  });

  it("dead-letters a non-retryable failure at once", async () => {
    const task = await submit({
      type: "fail",
      payload: { retryable: false, message: "bad input" },
      max_attempts: 5,
    });
    await settled(task.id);
    expect(await rowOf(task.id)).toMatchObject({ status: "DEAD", attempt: 1 });
    expect(await deadLetters(task.id)).toMatchObject([
      { reason: "non_retryable", attempt: 1, error: { retryable: false } },
    ]);
  });

  it("an unknown type is handed back for another worker: no attempt spent, no dead letter", async () => {
    // A rolling deployment: a newer worker may have the handler (unknown-type.test.ts: dead only later).
    const task = await submit({ type: "no.such.handler", max_attempts: 1 });
    await expect
      .poll(async () => rowOf(task.id), { timeout: 60_000, interval: 100 })
      .toMatchObject({ status: "SCHEDULED", attempt: 0, last_error: { code: "unknown_type" } });
    expect(await deadLetters(task.id)).toEqual([]);
  });

  it("a replayed dead task runs again, as a new attempt", async () => {
    const task = await submit({
      type: "fail",
      payload: { fail_attempts: 1 },
      max_attempts: 1,
    });
    await settled(task.id);
    expect((await rowOf(task.id)).status).toBe("DEAD");
    const store = new PgExecutionStore(pool, {
      rowLevelSecurity: false,
      random: Math.random,
      newId: randomUUID,
    });
    const replayed = await store.replay(tenant.id, task.id, null, Date.now());
    expect(replayed.kind).toBe("replayed");
    // Nobody adds it to Redis here: the pre-loader finds it.
    await expect
      .poll(async () => (await rowOf(task.id)).status, { timeout: 60_000, interval: 100 })
      .toBe("COMPLETED");
    expect(await rowOf(task.id)).toMatchObject({ attempt: 2, result: { attempt: 2 } });
  });
});

describe("user handler modules", () => {
  it("runs a module's handlers, and its CPU handlers in the piscina pool", async () => {
    const echo = await submit({ type: "user.echo", payload: { a: 1 } });
    const burn = await submit({ type: "user.burn", payload: { ms: 20 } });
    await settled(echo.id);
    await settled(burn.id);
    expect((await rowOf(echo.id)).result).toEqual({
      payload: { a: 1 },
      attempt: 1,
      type: "user.echo",
    });
    const result = (await rowOf(burn.id)).result as { threadId: number; taskId: string };
    expect(result).toMatchObject({ spins: true, taskId: burn.id });
    expect(result.threadId).not.toBe(threadId);
  });

  it("a CPU handler past its timeout is stopped and fails the attempt as a timeout", async () => {
    const runaway = await submit({
      type: "user.burn",
      payload: { ms: 60_000 },
      timeout_ms: 500,
      max_attempts: 1,
    });
    await settled(runaway.id);
    expect(await deadLetters(runaway.id)).toMatchObject([
      { reason: "exhausted", error: { code: "timeout" } },
    ]);
    // The pool's thread was terminated, not left spinning: the next CPU task runs.
    const next = await submit({ type: "user.burn", payload: { ms: 1 } });
    await settled(next.id);
    expect((await rowOf(next.id)).status).toBe("COMPLETED");
  });
});

describe("http handler", () => {
  let server: http.Server;
  let url: string;
  const seen: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];

  beforeAll(async () => {
    server = http.createServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => {
        body += chunk;
      });
      request.on("end", () => {
        seen.push({ headers: request.headers, body });
        if (request.url === "/slow") setTimeout(() => response.end("{}"), 3000);
        else if (request.url === "/refuse") response.writeHead(400).end("no");
        else response.writeHead(200, { "content-type": "application/json" }).end('{"ok":1}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("POSTs the body with the idempotency key and fencing token; 2xx completes", async () => {
    const task = await submit({
      type: "http",
      payload: { url: `${url}/ok`, body: { hello: "world" } },
      idempotency_key: `hook-${randomUUID()}`,
    });
    await settled(task.id);
    expect(await rowOf(task.id)).toMatchObject({
      status: "COMPLETED",
      result: { status: 200, body: { ok: 1 } },
    });
    const request = seen.find((s) => s.headers["x-chronofence-task-id"] === task.id)!;
    expect(JSON.parse(request.body)).toEqual({ hello: "world" });
    expect(request.headers["idempotency-key"]).toMatch(/^hook-/);
    expect(request.headers["x-chronofence-fencing-token"]).toMatch(/^\d+$/);
    expect(request.headers["x-chronofence-attempt"]).toBe("1");
  });

  it("a 4xx is not retried; a response slower than timeout_ms fails the attempt as a timeout", async () => {
    const refused = await submit({
      type: "http",
      payload: { url: `${url}/refuse` },
      max_attempts: 3,
    });
    const slow = await submit({
      type: "http",
      payload: { url: `${url}/slow` },
      timeout_ms: 300,
      max_attempts: 1,
    });
    await settled(refused.id);
    await settled(slow.id);
    expect(await deadLetters(refused.id)).toMatchObject([
      { reason: "non_retryable", attempt: 1, error: { code: "http_400" } },
    ]);
    expect(await deadLetters(slow.id)).toMatchObject([
      { reason: "exhausted", attempt: 1, error: { code: "timeout", retryable: true } },
    ]);
  });
});
