/**
 * "Never before run_at" at the fenced start itself, by the database's clock
 * (issue 13): a worker or an HTTP worker whose clock runs 10 minutes ahead
 * (CF_CLOCK_OFFSET_MS) is sent, or asks for, a task due in a moment. The
 * start refuses it as not due (nothing changes, no attempt spent) with how
 * long to wait; the worker waits that long without a slot and starts it
 * then; the task runs once, not before its run_at.
 */
import { randomUUID } from "node:crypto";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { offsetClock } from "../../src/adapters/clock/offset-clock.js";
import { systemClock } from "../../src/adapters/clock/system-clock.js";
import { MemoryTransport } from "../../src/adapters/memory/memory-transport.js";
import { PgExecutionStore } from "../../src/adapters/pg/execution-store.js";
import type { PgPool } from "../../src/adapters/pg/pool.js";
import { serviceInfrastructure } from "../../src/main/role-connections.js";
import { startWorker } from "../../src/main/worker.js";
import { call, startTenantFixture, startTestApi, type TenantFixture } from "./support/api.js";
import { armTasks, envelopeOf, taskRow } from "./support/armed-tasks.js";
import { testConfig, testPool } from "./support/services.js";

vi.setConfig({ testTimeout: 60_000 });

const FAST_MS = 600_000;
const fastClock = offsetClock(systemClock, FAST_MS);
let fixture: TenantFixture;
let pool: PgPool;

beforeAll(async () => {
  fixture = await startTenantFixture();
  pool = testPool(fixture.db.url, "start-not-before-test");
});

afterAll(async () => {
  await pool?.end();
  await fixture?.db.drop();
});

const soon = (inMs: number) =>
  armTasks(fixture.db.url, 1, {
    tenantId: fixture.tenant.id,
    type: "record",
    runAtMs: Date.now() + inMs,
  }).then((rows) => rows[0]!);

describe("the fenced start", () => {
  for (const coalesceMax of [0, 64]) {
    it(`refuses a task not due by the database's clock, whatever the caller's (coalesceMax ${coalesceMax})`, async () => {
      const store = new PgExecutionStore(pool, {
        rowLevelSecurity: false,
        random: Math.random,
        newId: randomUUID,
        coalesceMax,
      });
      const row = await soon(1500);
      const ref = { tenantId: row.tenantId, taskId: row.id, fencingToken: row.token };
      for (const withRunAt of [{ runAtMs: row.runAtMs }, {}]) {
        const early = await store.start({ ...ref, ...withRunAt }, "w", 5000, fastClock.nowMs());
        expect(early.kind).toBe("not_due");
        const dueInMs = (early as { dueInMs: number }).dueInMs;
        expect(dueInMs).toBeGreaterThan(0);
        expect(dueInMs).toBeLessThanOrEqual(1500);
      }
      expect(await taskRow(fixture.db.url, row.id)).toMatchObject({ status: "ARMED", attempt: 0 });
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, row.runAtMs - Date.now())));
      const started = await store.start(
        { ...ref, runAtMs: row.runAtMs },
        "w",
        5000,
        fastClock.nowMs(),
      );
      expect(started).toMatchObject({ kind: "started", execution: { attempt: 1 } });
      // Not due is only for the current token of an ARMED task: anything else stays stale.
      expect(await store.start(ref, "w", 5000, fastClock.nowMs())).toEqual({ kind: "stale" });
    });
  }

  it("over HTTP: a start before run_at answers 409 not_due and changes nothing, then starts", async () => {
    const api = await startTestApi(testConfig(fixture.db.url), fastClock);
    try {
      const row = await soon(2000);
      const start = () =>
        call(api.baseUrl, "POST", `/v1/executions/${row.id}/start`, {
          key: fixture.tenant.apiKey,
          body: { fencing_token: row.token, worker_id: "http-worker" },
        });
      const early = await start();
      expect(early.status).toBe(409);
      expect(early.body.error.details).toMatchObject({ reason: "not_due" });
      expect(early.body.error.details.due_in_ms).toBeGreaterThan(0);
      expect(await taskRow(fixture.db.url, row.id)).toMatchObject({ status: "ARMED", attempt: 0 });
      await new Promise((resolve) => setTimeout(resolve, early.body.error.details.due_in_ms));
      const late = await start();
      expect(late.status).toBe(200);
      expect(late.body).toMatchObject({ status: "RUNNING", attempt: 1 });
    } finally {
      await api.stop();
    }
  });
});

describe("a worker whose clock runs ahead", () => {
  it("runs an envelope delivered early only at its run_at, once, no attempt spent", async () => {
    const config = testConfig(fixture.db.url, {
      workerQueues: "standard",
      workerMetricsPort: 0,
      clockOffsetMs: FAST_MS,
    });
    const transport = new MemoryTransport();
    const ran: Array<{ taskId: string; atMs: number; attempt: number }> = [];
    const worker = await startWorker(
      config,
      offsetClock(systemClock, config.clockOffsetMs),
      pino({ level: "silent" }),
      {
        register: (registry) =>
          registry.register("record", async (_payload, ctx) => {
            ran.push({ taskId: ctx.taskId, atMs: Date.now(), attempt: ctx.attempt });
            return null;
          }),
      },
      { ...serviceInfrastructure(config), transport },
    );
    try {
      const row = await soon(2500);
      // What a dispatcher whose clock runs ahead does: publish at once.
      await transport
        .publisher()
        .publish([{ kind: "standard", key: row.tenantId, value: envelopeOf(row) }]);
      await expect
        .poll(async () => (await taskRow(fixture.db.url, row.id)).status, { timeout: 20_000 })
        .toBe("COMPLETED");
      expect(ran).toHaveLength(1);
      expect(ran[0]!.atMs).toBeGreaterThanOrEqual(row.runAtMs);
      expect(ran[0]!.attempt).toBe(1);
      expect((await taskRow(fixture.db.url, row.id)).attempt).toBe(1);
    } finally {
      await worker.stop();
    }
  });
});
