/**
 * The reconciler's re-arm backs off (adapters/pg/sql/dispatch.ts REARM_STALE,
 * docs/evidence.md F1): a task armed on time is re-armed one dispatch timeout
 * after its arm; a task armed L late waits max(timeout, L), at most
 * REARM_BACKOFF_LIMIT timeouts. Without it, a queue whose backlog outlasts the
 * timeout never drains: each re-arm adds an envelope behind the stale one.
 * The statement takes every instant as a parameter, so the test sets the
 * row's instants and asks at chosen ones.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgDispatchStore } from "../../src/adapters/pg/dispatch-store.js";
import type { PgPool } from "../../src/adapters/pg/pool.js";
import { REARM_BACKOFF_LIMIT } from "../../src/app/dispatch/reconciler.js";
import { type ApiFixture, call, startApiFixture } from "./support/api.js";
import { testPool, withPg } from "./support/services.js";

const TIMEOUT_MS = 1000;
const MAX_WAIT_MS = TIMEOUT_MS * REARM_BACKOFF_LIMIT;

let fixture: ApiFixture;
let pool: PgPool;
let store: PgDispatchStore;

beforeAll(async () => {
  fixture = await startApiFixture();
  pool = testPool(fixture.db.url, "rearm-backoff-test");
  store = new PgDispatchStore(pool);
});

afterAll(async () => {
  await pool?.end();
  await fixture?.stop();
});

/** A task far ahead (no role of this test dispatches it), then ARMED `lateMs` after its run_at. */
async function armedLate(lateMs: number): Promise<{ id: string; armedAtMs: number }> {
  const answer = await call(fixture.api.baseUrl, "POST", "/v1/tasks", {
    key: fixture.tenant.apiKey,
    body: { type: "r", delay_ms: 3_600_000 },
  });
  expect(answer.status).toBe(201);
  const id = answer.body.id as string;
  const armedAtMs = Date.parse(answer.body.run_at) + lateMs;
  await withPg(fixture.db.url, (c) =>
    c.query(
      `UPDATE tasks SET status = 'ARMED', armed_at = timestamptz 'epoch' + $2 * interval '1 millisecond'
        WHERE id = $1`,
      [id, armedAtMs],
    ),
  );
  return { id, armedAtMs };
}

const statusOf = (id: string) =>
  withPg(
    fixture.db.url,
    async (c) => (await c.query("SELECT status FROM tasks WHERE id = $1", [id])).rows[0].status,
  );

/** One sweep at `nowMs`, as the reconciler runs it: did it re-arm the task? */
async function rearmedAt(id: string, nowMs: number): Promise<boolean> {
  await store.rearmStale(nowMs - TIMEOUT_MS, MAX_WAIT_MS, nowMs, 1000);
  return (await statusOf(id)) === "SCHEDULED";
}

describe("re-arm of a stale ARMED task", () => {
  it("armed on time: re-armed once the dispatch timeout has passed, not before", async () => {
    // Armed 100 ms ahead of its run_at, as the dispatcher's lookahead does.
    const { id, armedAtMs } = await armedLate(-100);
    expect(await rearmedAt(id, armedAtMs + TIMEOUT_MS - 50)).toBe(false);
    expect(await rearmedAt(id, armedAtMs + 100 + TIMEOUT_MS + 50)).toBe(true);
  });

  it("armed 4 timeouts late: waits 4 timeouts before its next re-arm", async () => {
    const { id, armedAtMs } = await armedLate(4 * TIMEOUT_MS);
    expect(await rearmedAt(id, armedAtMs + 2 * TIMEOUT_MS)).toBe(false);
    expect(await rearmedAt(id, armedAtMs + 4 * TIMEOUT_MS - 50)).toBe(false);
    expect(await rearmedAt(id, armedAtMs + 4 * TIMEOUT_MS + 50)).toBe(true);
  });

  it("armed a hundred timeouts late: waits at most REARM_BACKOFF_LIMIT timeouts", async () => {
    const { id, armedAtMs } = await armedLate(100 * TIMEOUT_MS);
    expect(await rearmedAt(id, armedAtMs + MAX_WAIT_MS - 50)).toBe(false);
    expect(await rearmedAt(id, armedAtMs + MAX_WAIT_MS + 50)).toBe(true);
  });
});
