/**
 * A worker with no handler for a task's type (issue 13: a rolling
 * deployment): it hands the task back — SCHEDULED later, the attempt not
 * counted, no dead letter — counts it, and only once no worker had a
 * handler for CF_WORKER_UNKNOWN_TYPE_DEAD_AFTER_MS is the task DEAD
 * (reason unknown_type). The time since is kept in the task's last_error.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PgExecutionStore } from "../../src/adapters/pg/execution-store.js";
import type { PgPool } from "../../src/adapters/pg/pool.js";
import { ExecutionService } from "../../src/app/execution/execution-service.js";
import { Executor } from "../../src/app/execution/executor.js";
import { HandlerMap } from "../../src/app/execution/handler-registry.js";
import { parseEnvelope } from "../../src/domain/inbound-envelope.js";
import { noWorkerMetrics } from "../../src/ports/worker-metrics.js";
import { FakeClock } from "../support/fake-clock.js";
import { startTenantFixture, type TenantFixture } from "./support/api.js";
import { armTasks, envelopeOf, taskRow } from "./support/armed-tasks.js";
import { testPool, withPg } from "./support/services.js";

let fixture: TenantFixture;
let pool: PgPool;

beforeAll(async () => {
  fixture = await startTenantFixture();
  pool = testPool(fixture.db.url, "unknown-type-test");
});
afterAll(async () => {
  await pool?.end();
  await fixture?.db.drop();
});

it("hands the task back without spending an attempt, and dead-letters it only after the configured time", async () => {
  const clock = new FakeClock(Date.now());
  const noHandler: string[] = [];
  const store = new PgExecutionStore(pool, {
    rowLevelSecurity: false,
    random: Math.random,
    newId: randomUUID,
  });
  const executor = new Executor(
    {
      executions: new ExecutionService(
        { store, hotTier: { addDue: async () => undefined }, onError: () => undefined },
        { hotWindowMs: 60_000 },
      ),
      handlers: new HandlerMap(),
      clock,
      metrics: { ...noWorkerMetrics, noHandler: (type) => noHandler.push(type) },
      onError: () => undefined,
    },
    {
      workerId: "old-worker",
      leaseMs: 5000,
      heartbeatMs: 1000,
      dependencyRetryMs: 10,
      maxResultBytes: 1024,
      unknownType: { retryMs: 30_000, deadAfterMs: 3_600_000 },
    },
  );
  const [row] = await armTasks(fixture.db.url, 1, {
    tenantId: fixture.tenant.id,
    type: "new.type",
  });
  const run = async (token: string, runAtMs: number) => {
    const parsed = parseEnvelope(envelopeOf({ ...row!, token, runAtMs }));
    if (!parsed.ok) throw new Error(parsed.reason);
    return executor.execute(parsed.envelope, "standard");
  };
  /** What the dispatcher does once the task is due again: ARMED with a new token, due now. */
  const rearm = () =>
    withPg(fixture.db.url, async (c) => {
      const { rows } = await c.query(
        `UPDATE tasks SET status = 'ARMED', fencing_token = nextval('fencing_token_seq'),
                run_at = date_trunc('milliseconds', now()) WHERE id = $1
         RETURNING fencing_token::text AS token, (extract(epoch FROM run_at) * 1000)::float8 AS ms`,
        [row!.id],
      );
      return { token: rows[0].token as string, runAtMs: Math.round(rows[0].ms) };
    });

  expect(await run(row!.token, row!.runAtMs)).toBe("handed_back");
  const first = await taskRow(fixture.db.url, row!.id);
  expect(first).toMatchObject({ status: "SCHEDULED", attempt: 0 });
  expect(first.run_at_ms).toBe(clock.nowMs() + 30_000);
  expect(first.last_error).toMatchObject({ code: "unknown_type" });
  const sinceMs = first.last_error!.details!.unhandled_since_ms;
  expect(sinceMs).toBe(clock.nowMs());

  // Still within the time: handed back again, the first instant kept.
  clock.advance(1_800_000);
  let again = await rearm();
  expect(await run(again.token, again.runAtMs)).toBe("handed_back");
  const second = await taskRow(fixture.db.url, row!.id);
  expect(second).toMatchObject({ status: "SCHEDULED", attempt: 0 });
  expect(second.last_error!.details!.unhandled_since_ms).toBe(sinceMs);

  // No worker had a handler for an hour: DEAD, with its dead letter.
  clock.advance(1_800_000);
  again = await rearm();
  expect(await run(again.token, again.runAtMs)).toBe("dead");
  expect(await taskRow(fixture.db.url, row!.id)).toMatchObject({ status: "DEAD" });
  const letters = await withPg(
    fixture.db.url,
    async (c) =>
      (await c.query("SELECT reason FROM dead_letters WHERE task_id = $1", [row!.id])).rows,
  );
  expect(letters).toEqual([{ reason: "unknown_type" }]);
  expect(noHandler).toEqual(["new.type", "new.type", "new.type"]);
});
