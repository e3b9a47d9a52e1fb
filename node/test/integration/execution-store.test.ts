/**
 * The fenced execution protocol on the real Postgres (ports/execution-store.ts),
 * driven by explicit times: start/heartbeat/complete/fail answer `stale` for
 * anything but the current token, retries move run_at (across day partitions
 * too) with a new token, exhausted and non-retryable failures dead-letter,
 * replay revives a DEAD task, expired leases are failed idempotently, and the
 * API's row-level-security flavour gives the same answers within one tenant.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { PgExecutionStore } from "../../src/adapters/pg/execution-store.js";
import { createPgPool, type PgPool } from "../../src/adapters/pg/pool.js";
import type { ExecutionRef } from "../../src/ports/execution-store.js";
import {
  newTenant,
  startTenantFixture,
  type TenantFixture,
  type TestTenant,
} from "./support/api.js";
import { testConfig, withPg } from "./support/services.js";

const DAY_MS = 86_400_000;
let fixture: TenantFixture;
let other: TestTenant;
let ownerPool: PgPool;
let apiPool: PgPool;
let store: PgExecutionStore;
let apiStore: PgExecutionStore;
let random = 0;

const poolOf = (url: string, role: string | null) =>
  createPgPool({
    connectionString: url,
    maxConnections: 4,
    statementTimeoutMs: 5000,
    connectTimeoutMs: 2000,
    role,
    applicationName: "execution-store-test",
    onError: () => undefined,
  });

beforeAll(async () => {
  fixture = await startTenantFixture();
  other = await newTenant(testConfig(fixture.db.url));
  ownerPool = poolOf(fixture.db.url, null);
  apiPool = poolOf(fixture.db.url, "chronofence_api");
  const options = { random: () => random, newId: randomUUID };
  store = new PgExecutionStore(ownerPool, { ...options, rowLevelSecurity: false });
  apiStore = new PgExecutionStore(apiPool, { ...options, rowLevelSecurity: true });
});

afterAll(async () => {
  await ownerPool?.end();
  await apiPool?.end();
  await fixture?.db.drop();
});

interface Armed extends ExecutionRef {
  runAtMs: number;
}

/** Inserts a task and arms it as a dispatcher would (a fresh token). */
async function armedTask(
  options: { runAtMs?: number; maxAttempts?: number; tenantId?: string; key?: string } = {},
): Promise<Armed> {
  const id = randomUUID();
  const tenantId = options.tenantId ?? fixture.tenant.id;
  const runAtMs = options.runAtMs ?? Date.now();
  return withPg(fixture.db.url, async (c) => {
    await c.query(
      `INSERT INTO tasks (id, tenant_id, type, payload, priority, status, run_at, max_attempts,
                          timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
                          idempotency_key, created_at, updated_at, fencing_token, armed_at)
       VALUES ($1, $2, 'job', '{"n":1}', 'standard', 'ARMED', to_timestamp($3 / 1000.0), $4,
               1000, 'exponential', 1000, 60000, $5, now(), now(), nextval('fencing_token_seq'), now())`,
      [id, tenantId, runAtMs, options.maxAttempts ?? 3, options.key ?? null],
    );
    if (options.key) {
      await c.query(
        `INSERT INTO idempotency_keys VALUES ($1, $2, '\\x00', $3, to_timestamp($4 / 1000.0), now())`,
        [tenantId, options.key, id, runAtMs],
      );
    }
    const row = (await c.query("SELECT fencing_token::text AS t FROM tasks WHERE id = $1", [id]))
      .rows[0];
    return { tenantId, taskId: id, fencingToken: row.t, runAtMs };
  });
}

const rowOf = (id: string) =>
  withPg(
    fixture.db.url,
    async (c) =>
      (
        await c.query(
          `SELECT status, attempt, fencing_token::text AS token, tableoid::regclass::text AS part,
                  (extract(epoch FROM run_at) * 1000)::float8 AS run_at_ms, last_error, result,
                  lease_owner, (extract(epoch FROM lease_expires_at) * 1000)::float8 AS lease_ms,
                  (extract(epoch FROM started_at) * 1000)::float8 AS started_ms
             FROM tasks WHERE id = $1`,
          [id],
        )
      ).rows[0],
  );

const deadLettersOf = (id: string) =>
  withPg(
    fixture.db.url,
    async (c) =>
      (
        await c.query(
          "SELECT reason, attempt, error, payload, replayed_at FROM dead_letters WHERE task_id = $1 ORDER BY dead_at",
          [id],
        )
      ).rows,
  );

describe("fenced start, heartbeat, complete", () => {
  it("starts once with the current token; every other start is stale or not found", async () => {
    const task = await armedTask();
    const now = Date.now();
    expect(await store.start({ ...task, fencingToken: "999999999" }, "w1", 5000, now)).toEqual({
      kind: "stale",
    });
    expect(await store.start({ ...task, fencingToken: "x'" }, "w1", 5000, now)).toEqual({
      kind: "stale",
    });
    const started = await store.start(task, "w1", 5000, now);
    expect(started).toEqual({
      kind: "started",
      execution: {
        attempt: 1,
        maxAttempts: 3,
        runAtMs: task.runAtMs,
        timeoutMs: 1000,
        leaseExpiresAtMs: now + 5000,
      },
    });
    expect(await store.start(task, "w2", 5000, now)).toEqual({ kind: "stale" }); // duplicate
    expect(await store.start({ ...task, taskId: randomUUID() }, "w1", 5000, now)).toEqual({
      kind: "not_found",
    });
    expect(await store.start({ ...task, tenantId: other.id }, "w1", 5000, now)).toEqual({
      kind: "not_found",
    });
    expect(await store.start({ ...task, taskId: "nope" }, "w1", 5000, now)).toEqual({
      kind: "not_found",
    });
    // A run_at that is not the task's (an old envelope of a retried task): stale.
    expect(await store.heartbeat({ ...task, runAtMs: task.runAtMs + 1 }, "w1", 5000, now)).toEqual({
      kind: "stale",
    });
  });

  it("heartbeats extend the lease; complete stores the result once; later calls are stale", async () => {
    const task = await armedTask();
    const now = Date.now();
    await store.start(task, "w1", 5000, now);
    expect(await store.heartbeat(task, "w1", 5000, now + 3000)).toEqual({
      kind: "extended",
      leaseExpiresAtMs: now + 8000,
    });
    expect(await store.complete(task, '{"ok":true}', now + 4000)).toEqual({
      kind: "completed",
      released: [],
    });
    expect(await store.complete(task, '{"ok":false}', now + 4001)).toEqual({ kind: "stale" });
    expect(await store.heartbeat(task, "w1", 5000, now + 4002)).toEqual({ kind: "stale" });
    expect(await store.fail(task, { message: "late", retryable: true }, now + 4003)).toEqual({
      kind: "stale",
    });
    const row = await rowOf(task.taskId);
    expect(row).toMatchObject({ status: "COMPLETED", attempt: 1, result: { ok: true } });
  });
});

describe("coalesced starts and completions", () => {
  it("one statement per turn; each caller gets its own answer, duplicates and refusals included", async () => {
    const coalesced = new PgExecutionStore(ownerPool, {
      rowLevelSecurity: false,
      random: () => 0,
      newId: randomUUID,
      coalesceMax: 64,
    });
    const tasks = await Promise.all([1, 2, 3, 4].map(() => armedTask()));
    const now = Date.now();
    const [a, b, c, d] = tasks as [Armed, Armed, Armed, Armed];
    const starts = await Promise.all([
      coalesced.start(a, "w", 5000, now),
      coalesced.start(a, "w", 5000, now), // the same envelope twice in one turn
      coalesced.start(b, "w", 5000, now),
      coalesced.start({ ...c, fencingToken: "999999999" }, "w", 5000, now),
      coalesced.start(d, "w", 5000, now),
      coalesced.start({ ...d, taskId: randomUUID() }, "w", 5000, now),
    ]);
    expect(starts.map((s) => s.kind)).toEqual([
      "started",
      "stale",
      "started",
      "stale",
      "started",
      "not_found",
    ]);
    expect(starts[0]).toMatchObject({ execution: { attempt: 1, leaseExpiresAtMs: now + 5000 } });
    const completions = await Promise.allSettled([
      coalesced.complete(a, '{"n":1}', now + 1),
      coalesced.complete(b, '"\\u0000"', now + 1), // jsonb refuses a NUL: only this caller fails
      coalesced.complete(c, "null", now + 1), // never started
      coalesced.complete(d, "[2]", now + 1),
    ]);
    expect(completions.map((c) => (c.status === "fulfilled" ? c.value.kind : "rejected"))).toEqual([
      "completed",
      "rejected",
      "stale",
      "completed",
    ]);
    expect((await rowOf(a.taskId)).result).toEqual({ n: 1 });
    expect((await rowOf(b.taskId)).status).toBe("RUNNING");
    expect((await rowOf(d.taskId)).result).toEqual([2]);
  });
  it("a turn's starts and completions share one statement; each caller still gets its own answer", async () => {
    const coalesced = new PgExecutionStore(ownerPool, {
      rowLevelSecurity: false,
      random: () => 0,
      newId: randomUUID,
      coalesceMax: 64,
    });
    const [a, b, node, c, d, e] = (await Promise.all(
      [1, 2, 3, 4, 5, 6].map(() => armedTask()),
    )) as Armed[] as [Armed, Armed, Armed, Armed, Armed, Armed];
    await withPg(fixture.db.url, (db) =>
      db.query("UPDATE tasks SET workflow_id = $2 WHERE id = $1", [node.taskId, randomUUID()]),
    );
    const now = Date.now();
    await Promise.all([a, b, node].map((t) => coalesced.start(t, "w", 5000, now)));
    const queries = vi.spyOn(ownerPool, "query");
    const steps = () =>
      queries.mock.calls.filter(([q]) =>
        String((q as { text?: string }).text ?? q).includes("WITH started AS"),
      ).length;
    try {
      const turn = await Promise.all([
        coalesced.start(c, "w", 5000, now + 1),
        coalesced.start({ ...d, fencingToken: "999999999" }, "w", 5000, now + 1),
        coalesced.complete(a, '{"n":1}', now + 1),
        coalesced.complete(node, "2", now + 1), // a workflow node: released in a transaction after
        coalesced.complete(e, "3", now + 1), // never started
      ]);
      expect(turn.map((x) => x.kind)).toEqual([
        "started",
        "stale",
        "completed",
        "completed",
        "stale",
      ]);
      expect(steps()).toBe(1);
      // A result Postgres refuses fails the shared statement: each then goes its own way, and
      // only the refused caller fails.
      const refused = await Promise.allSettled([
        coalesced.start(d, "w", 5000, now + 2),
        coalesced.complete(b, '"\\u0000"', now + 2),
        coalesced.complete(c, "4", now + 2),
      ]);
      expect(refused.map((x) => (x.status === "fulfilled" ? x.value.kind : "rejected"))).toEqual([
        "started",
        "rejected",
        "completed",
      ]);
      expect(steps()).toBe(2);
    } finally {
      queries.mockRestore();
    }
    expect(
      await Promise.all([a, b, node, c, d, e].map(async (t) => (await rowOf(t.taskId)).status)),
    ).toEqual(["COMPLETED", "RUNNING", "COMPLETED", "COMPLETED", "RUNNING", "ARMED"]);
    expect((await rowOf(a.taskId)).result).toEqual({ n: 1 });
  });

  it("a coalesced start is stamped when its statement leaves, not when it was asked for", async () => {
    const asked = Date.now() - 60_000;
    const left = Date.now();
    const coalesced = new PgExecutionStore(ownerPool, {
      rowLevelSecurity: false,
      random: () => 0,
      newId: randomUUID,
      coalesceMax: 64,
      nowMs: () => left,
    });
    const task = await armedTask();
    const started = await coalesced.start(task, "w", 5000, asked);
    // The lease runs from the stamp: a start that waited (a linger, the statement before
    // it) gets its whole lease, and started_at says when the start really went out.
    expect(started).toMatchObject({ execution: { leaseExpiresAtMs: left + 5000 } });
    expect((await rowOf(task.taskId)).started_ms).toBe(left);
  });
});

describe("coalesced completions of workflow nodes", () => {
  it("a node's refused completion fails only its caller: the others' are already committed", async () => {
    const coalesced = new PgExecutionStore(ownerPool, {
      rowLevelSecurity: false,
      random: () => 0,
      newId: randomUUID,
      coalesceMax: 64,
    });
    const [a, node, b] = (await Promise.all([1, 2, 3].map(() => armedTask()))) as [
      Armed,
      Armed,
      Armed,
    ];
    // A workflow node goes to the transaction with the release, past the plain statement.
    await withPg(fixture.db.url, (c) =>
      c.query("UPDATE tasks SET workflow_id = $2 WHERE id = $1", [node.taskId, randomUUID()]),
    );
    const now = Date.now();
    await Promise.all([a, node, b].map((t) => coalesced.start(t, "w", 5000, now)));
    const completions = await Promise.allSettled([
      coalesced.complete(a, "1", now + 1),
      coalesced.complete(node, '"\\u0000"', now + 1), // jsonb refuses a NUL: the transaction fails
      coalesced.complete(b, "2", now + 1),
    ]);
    expect(completions.map((c) => (c.status === "fulfilled" ? c.value.kind : "rejected"))).toEqual([
      "completed",
      "rejected",
      "completed",
    ]);
    expect((await rowOf(node.taskId)).status).toBe("RUNNING");
  });
});

describe("failures", () => {
  it("a retryable failure goes back to SCHEDULED after the backoff, with a new token", async () => {
    const task = await armedTask({ key: `k-${randomUUID()}` });
    const now = Date.now();
    await store.start(task, "w1", 5000, now);
    random = 0;
    const failed = await store.fail(
      task,
      { message: "boom", code: "E1", retryable: true, details: { n: 1 } },
      now + 10,
    );
    expect(failed).toEqual({
      kind: "retrying",
      attempt: 1,
      nextRunAtMs: now + 10 + 500,
      tenantId: task.tenantId,
      taskId: task.taskId,
    });
    const row = await rowOf(task.taskId);
    expect(row).toMatchObject({ status: "SCHEDULED", attempt: 1, run_at_ms: now + 510 });
    expect(BigInt(row.token)).toBeGreaterThan(BigInt(task.fencingToken));
    expect(row.last_error).toMatchObject({
      message: "boom",
      code: "E1",
      retryable: true,
      details: { n: 1 },
      attempt: 1,
      worker_id: "w1",
    });
    // The old holder can no longer do anything, with or without run_at.
    expect(await store.complete(task, "null", now + 20)).toEqual({ kind: "stale" });
    const { runAtMs: _, ...withoutRunAt } = task;
    expect(await store.complete(withoutRunAt, "null", now + 20)).toEqual({ kind: "stale" });
  });

  it("a retry that crosses midnight moves the row to the next day's partition, and its key with it", async () => {
    const key = `k-${randomUUID()}`;
    const midnight = Math.ceil(Date.now() / DAY_MS) * DAY_MS;
    // Due already (a start waits for run_at by the database's clock); the fail's clock is midnight's.
    const task = await armedTask({ runAtMs: Date.now() - 1000, key });
    const before = await rowOf(task.taskId);
    await store.start(task, "w1", 5000, midnight - 1000);
    random = 0.999_999; // 1000 ms for attempt 1
    const failed = await store.fail(task, { message: "x", retryable: true }, midnight - 500);
    expect(failed).toMatchObject({ kind: "retrying", nextRunAtMs: midnight + 500 });
    const after = await rowOf(task.taskId);
    expect(after.part).not.toBe(before.part);
    expect(after).toMatchObject({ status: "SCHEDULED", run_at_ms: midnight + 500 });
    const keyRow = await withPg(fixture.db.url, async (c) => {
      const r = await c.query(
        "SELECT (extract(epoch FROM task_run_at) * 1000)::float8 AS ms FROM idempotency_keys WHERE idempotency_key = $1",
        [key],
      );
      return r.rows[0];
    });
    expect(keyRow.ms).toBe(midnight + 500);
  });

  it("exhausted attempts and non-retryable failures become DEAD with a dead letter", async () => {
    const once = await armedTask({ maxAttempts: 1 });
    const now = Date.now();
    await store.start(once, "w1", 5000, now);
    const dead = await store.fail(once, { message: "last", retryable: true }, now + 1);
    expect(dead).toMatchObject({ kind: "dead", attempt: 1 });
    expect(await rowOf(once.taskId)).toMatchObject({ status: "DEAD" });
    expect(await deadLettersOf(once.taskId)).toMatchObject([
      { reason: "exhausted", attempt: 1, payload: { n: 1 }, error: { message: "last" } },
    ]);

    const permanent = await armedTask({ maxAttempts: 5 });
    await store.start(permanent, "w1", 5000, now);
    expect(
      await store.fail(permanent, { message: "bad input", retryable: false }, now + 1),
    ).toMatchObject({ kind: "dead" });
    expect(await deadLettersOf(permanent.taskId)).toMatchObject([{ reason: "non_retryable" }]);
  });

  it("an interrupted attempt is due at once with its attempt given back, even the last; fenced", async () => {
    const task = await armedTask({ maxAttempts: 1, key: `k-${randomUUID()}` });
    const now = Date.now();
    await store.start(task, "w1", 5000, now);
    const stopping = { message: "stopping", code: "worker_stopping", retryable: true };
    const stale = { ...task, fencingToken: String(BigInt(task.fencingToken) + 1000n) };
    expect(await store.interrupt(stale, stopping, now + 5)).toEqual({ kind: "stale" });
    expect(await rowOf(task.taskId)).toMatchObject({ status: "RUNNING", attempt: 1 });
    expect(await store.interrupt(task, stopping, now + 10)).toEqual({
      kind: "retrying",
      attempt: 1,
      nextRunAtMs: now + 10,
      tenantId: task.tenantId,
      taskId: task.taskId,
    });
    const row = await rowOf(task.taskId);
    expect(row).toMatchObject({ status: "SCHEDULED", attempt: 0, run_at_ms: now + 10 });
    expect(row.last_error).toMatchObject({ code: "worker_stopping", attempt: 1, worker_id: "w1" });
    expect(BigInt(row.token)).toBeGreaterThan(BigInt(task.fencingToken));
    expect(await store.interrupt(task, stopping, now + 20)).toEqual({ kind: "stale" });
    expect(await store.complete(task, "null", now + 20)).toEqual({ kind: "stale" });
    expect(await deadLettersOf(task.taskId)).toEqual([]);
  });

  it("a writer that waited on a row another transaction moved retries and answers stale", async () => {
    // From a connection of its own: a transaction sees pg_stat_activity as of its first read.
    const lockWaiters = () =>
      withPg(
        fixture.db.url,
        async (c) =>
          (
            await c.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock'`,
            )
          ).rows[0].n as number,
      );
    const raceWithMove = async (racer: PgExecutionStore) => {
      const task = await armedTask();
      const now = Date.now();
      await store.start(task, "w1", 5000, now);
      return withPg(fixture.db.url, async (mover) => {
        await mover.query("BEGIN");
        await mover.query(
          `UPDATE tasks SET run_at = run_at + interval '1 day', status = 'SCHEDULED',
                  fencing_token = nextval('fencing_token_seq') WHERE id = $1`,
          [task.taskId],
        );
        const waiting = racer.complete(task, "null", now + 1);
        waiting.catch(() => undefined);
        // Commit only once the racer is blocked on the row lock (the race this is about).
        await expect
          .poll(() => lockWaiters(), { timeout: 20_000, interval: 10 })
          .toBeGreaterThan(0);
        await mover.query("COMMIT");
        return waiting;
      });
    };
    // Without a retry the race surfaces as Postgres' 40001 (the row moved partitions)...
    const noRetry = new PgExecutionStore(ownerPool, {
      rowLevelSecurity: false,
      random: () => 0,
      newId: randomUUID,
      maxSerializationRetries: 1,
    });
    await expect(raceWithMove(noRetry)).rejects.toMatchObject({
      cause: { code: "40001" },
    });
    // ...which the store absorbs by asking again: the token moved on.
    expect(await raceWithMove(store)).toEqual({ kind: "stale" });
    // So does a coalesced completion: its batch's statement is run again.
    const coalesced = (maxSerializationRetries: number) =>
      new PgExecutionStore(ownerPool, {
        rowLevelSecurity: false,
        random: () => 0,
        newId: randomUUID,
        coalesceMax: 64,
        maxSerializationRetries,
      });
    await expect(raceWithMove(coalesced(1))).rejects.toMatchObject({
      cause: { code: "40001" },
    });
    expect(await raceWithMove(coalesced(3))).toEqual({ kind: "stale" });
  });
});

describe("replay", () => {
  it("revives a DEAD task of its tenant with a new token; anything else is refused", async () => {
    const task = await armedTask({ maxAttempts: 1 });
    const now = Date.now();
    await apiStore.start(task, "w1", 5000, now);
    await apiStore.fail(task, { message: "x", retryable: false }, now + 1);
    expect(await apiStore.replay(other.id, task.taskId, null, now + 2)).toEqual({
      kind: "not_found",
    });
    expect(
      await apiStore.replay(task.tenantId, task.taskId, fixture.tenant.apiKeyId, now + 2),
    ).toEqual({
      kind: "replayed",
      tenantId: task.tenantId,
      taskId: task.taskId,
      runAtMs: now + 2,
    });
    const row = await rowOf(task.taskId);
    expect(row).toMatchObject({ status: "SCHEDULED", run_at_ms: now + 2 });
    expect(BigInt(row.token)).toBeGreaterThan(BigInt(task.fencingToken));
    expect((await deadLettersOf(task.taskId))[0].replayed_at).not.toBeNull();
    expect(await apiStore.replay(task.tenantId, task.taskId, null, now + 3)).toEqual({
      kind: "not_dead",
      status: "SCHEDULED",
    });
    expect(await apiStore.replay(task.tenantId, randomUUID(), null, now + 3)).toEqual({
      kind: "not_found",
    });
    const audit = await withPg(
      fixture.db.url,
      async (c) =>
        (await c.query("SELECT action FROM audit_log WHERE $1 = ANY(task_ids)", [task.taskId]))
          .rows,
    );
    expect(audit).toEqual([{ action: "task.replay" }]);

    // The next attempt spent the budget: a failure kills it again, with a second letter.
    const rearmed = await withPg(fixture.db.url, async (c) => {
      const r = await c.query(
        "UPDATE tasks SET status = 'ARMED', fencing_token = nextval('fencing_token_seq') WHERE id = $1 RETURNING fencing_token::text AS t",
        [task.taskId],
      );
      return r.rows[0].t as string;
    });
    const again = { ...task, fencingToken: rearmed, runAtMs: now + 2 };
    expect(await apiStore.start(again, "w1", 5000, now + 5)).toMatchObject({
      execution: { attempt: 2 },
    });
    expect(await apiStore.fail(again, { message: "y", retryable: true }, now + 6)).toMatchObject({
      kind: "dead",
    });
    expect(await deadLettersOf(task.taskId)).toHaveLength(2);
  });

  it("under row-level security, another tenant's execution is not found", async () => {
    const task = await armedTask();
    const now = Date.now();
    expect(await apiStore.start({ ...task, tenantId: other.id }, "w1", 5000, now)).toEqual({
      kind: "not_found",
    });
    expect(await apiStore.start(task, "w1", 5000, now)).toMatchObject({ kind: "started" });
    random = 0.999_999;
    // A retry that moves the row to tomorrow, as the API role.
    const failed = await apiStore.fail(
      task,
      { message: "x", retryable: true },
      Math.ceil(now / DAY_MS) * DAY_MS - 100,
    );
    expect(failed).toMatchObject({ kind: "retrying" });
  });
});

describe("expired execution leases", () => {
  it("are failed with a new token, retried or dead-lettered; a second pass finds nothing", async () => {
    const now = Date.now();
    const retried = await armedTask({ maxAttempts: 3 });
    const last = await armedTask({ maxAttempts: 1 });
    const alive = await armedTask();
    await store.start(retried, "zombie", 1000, now);
    await store.start(last, "zombie", 1000, now);
    await store.start(alive, "w1", 60_000, now);
    random = 0;
    const expired = await store.expireLeases(now + 1001, 100);
    const mine = expired.filter((e) => [retried.taskId, last.taskId].includes(e.taskId));
    expect(mine).toHaveLength(2);
    expect(mine.find((e) => e.taskId === retried.taskId)).toEqual({
      tenantId: retried.tenantId,
      taskId: retried.taskId,
      outcome: "retrying",
      nextRunAtMs: now + 1001 + 500,
      released: [],
    });
    expect(mine.find((e) => e.taskId === last.taskId)?.outcome).toBe("dead");
    expect(await deadLettersOf(last.taskId)).toMatchObject([
      { reason: "lease_expired", error: { code: "lease_expired", worker_id: "zombie" } },
    ]);
    expect(expired.map((e) => e.taskId)).not.toContain(alive.taskId);
    // The zombie's late commit changes nothing.
    expect(await store.complete(retried, "null", now + 1500)).toEqual({ kind: "stale" });
    expect(await store.complete(last, "null", now + 1500)).toEqual({ kind: "stale" });
    expect(await store.expireLeases(now + 1002, 100)).toEqual([]);
  });
});
