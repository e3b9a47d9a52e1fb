/**
 * The worker's coalesced starts and completions run on the day's partition
 * as prepared statements (execution-batches.ts, migrations/000022), as the
 * worker's own database role: Postgres keeps a generic plan for them instead
 * of planning each batch. A batch across midnight, a ref whose day has no
 * partition and a partition the role holds no grant on go through `tasks`
 * and answer the same.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgExecutionStore } from "../../src/adapters/pg/execution-store.js";
import type { PgPool } from "../../src/adapters/pg/pool.js";
import type { ExecutionRef } from "../../src/ports/execution-store.js";
import { startTenantFixture, type TenantFixture } from "./support/api.js";
import { onePreparingConnection, partitionOf, preparedStatements } from "./support/prepared.js";
import { withPg } from "./support/services.js";

const DAY_MS = 86_400_000;
let fixture: TenantFixture;
let pool: PgPool;
let store: PgExecutionStore;
let nextToken = 1000;

beforeAll(async () => {
  fixture = await startTenantFixture();
  pool = onePreparingConnection(fixture.db.url, "chronofence_worker", "prepared-batches-test");
  store = new PgExecutionStore(pool, {
    rowLevelSecurity: false,
    random: () => 0.5,
    newId: randomUUID,
    coalesceMax: 64,
    coalesceMaxInFlight: 1,
  });
});

afterAll(async () => {
  await pool?.end();
  await fixture?.db.drop();
});

/** ARMED tasks due at `runAtMs` (past), each with a token of its own. */
async function armed(runAtMs: number[]): Promise<ExecutionRef[]> {
  const refs = runAtMs.map((ms) => ({
    tenantId: fixture.tenant.id,
    taskId: randomUUID(),
    fencingToken: String(nextToken++),
    runAtMs: ms,
  }));
  await withPg(fixture.db.url, (c) =>
    c.query(
      `INSERT INTO tasks (id, tenant_id, type, payload, priority, status, fencing_token, run_at,
                          max_attempts, timeout_ms, backoff_strategy, backoff_base_ms,
                          backoff_max_ms, created_at, updated_at)
       SELECT r.id, $1, 'noop', '{}', 'standard', 'ARMED', r.token, to_timestamp(r.ms / 1000.0),
              3, 30000, 'exponential', 1000, 60000, now(), now()
         FROM unnest($2::uuid[], $3::bigint[], $4::float8[]) AS r (id, token, ms)`,
      [
        fixture.tenant.id,
        refs.map((r) => r.taskId),
        refs.map((r) => r.fencingToken),
        refs.map((r) => r.runAtMs),
      ],
    ),
  );
  return refs;
}

/** Starts and then completes the refs, each as one coalesced batch; answers each outcome's kind. */
async function run(refs: ExecutionRef[]): Promise<string[]> {
  const nowMs = Date.now();
  const starts = await Promise.all(refs.map((r) => store.start(r, "worker-1", 30_000, nowMs)));
  const completions = await Promise.all(
    refs.map((r, i) => {
      const start = starts[i]!;
      return start.kind === "started" ? store.complete(r, "null", nowMs + 1) : start;
    }),
  );
  return completions.map((c) => c.kind);
}

const statusOf = async (refs: ExecutionRef[]) =>
  withPg(fixture.db.url, async (c) => {
    const { rows } = await c.query(
      "SELECT status FROM tasks WHERE id = ANY ($1::uuid[]) ORDER BY status",
      [refs.map((r) => r.taskId)],
    );
    return rows.map((r) => r.status);
  });

describe("prepared batches on the day's partition", () => {
  it("starts and completes a day's batches through its partition, planned once for all of them", async () => {
    const dueMs = Date.now() - 1000;
    const day = partitionOf(dueMs).slice("tasks_p".length);
    for (let round = 0; round < 8; round++) {
      // Batches of one and two tasks, as a low rate makes them.
      const refs = await armed(round % 2 === 0 ? [dueMs] : [dueMs, dueMs]);
      expect(await run(refs)).toEqual(refs.map(() => "completed"));
      expect(await statusOf(refs)).toEqual(refs.map(() => "COMPLETED"));
    }
    const prepared = await preparedStatements(pool);
    expect(prepared.map((p) => p.name)).toEqual([
      `cf_complete_many_${day}`,
      `cf_start_many_${day}`,
    ]);
    // Five custom plans, then the generic one for every later batch (more custom ones only if
    // an ANALYZE of the partition made Postgres plan again).
    for (const p of prepared) {
      expect(p.custom_plans + p.generic_plans).toBe(8);
      expect(p.generic_plans).toBeGreaterThanOrEqual(1);
    }
  });

  it("a turn of starts and completions is one prepared statement on the partition", async () => {
    const dueMs = Date.now() - 1000;
    const day = partitionOf(dueMs).slice("tasks_p".length);
    let running = await armed([dueMs]);
    expect((await store.start(running[0]!, "worker-1", 30_000, Date.now())).kind).toBe("started");
    for (let round = 0; round < 7; round++) {
      // Each turn completes the task the turn before started and starts the next.
      const next = await armed([dueMs]);
      const nowMs = Date.now();
      const [completed, started] = await Promise.all([
        store.complete(running[0]!, "null", nowMs),
        store.start(next[0]!, "worker-1", 30_000, nowMs),
      ]);
      expect([completed.kind, started.kind]).toEqual(["completed", "started"]);
      expect(await statusOf([...running, ...next])).toEqual(["COMPLETED", "RUNNING"]);
      running = next;
    }
    const step = (await preparedStatements(pool)).find((p) => p.name === `cf_step_many_${day}`);
    expect(step && step.custom_plans + step.generic_plans).toBe(7);
    expect(step?.generic_plans).toBeGreaterThanOrEqual(1);
  });

  it("a batch across midnight goes through tasks", async () => {
    const nowMs = Date.now();
    const yesterdayMs = Math.floor(nowMs / DAY_MS) * DAY_MS - 1;
    const refs = await armed([yesterdayMs, nowMs - 1000]);
    expect(await run(refs)).toEqual(["completed", "completed"]);
    expect((await preparedStatements(pool)).map((p) => p.name)).not.toContain(
      `cf_start_many_${partitionOf(yesterdayMs).slice("tasks_p".length)}`,
    );
  });

  it("a ref of a day with no partition starts nothing and fails nothing", async () => {
    const [ref] = await armed([Date.now() - 1000]);
    const lost = { ...ref!, runAtMs: Date.parse("1990-01-01T00:00:00Z") };
    // The task is ARMED with this token at another run_at: refused as a start whose time has
    // not come by that run_at (START_REFUSAL), as through `tasks`.
    expect(await run([lost])).toEqual(["not_due"]);
    expect(await run([ref!])).toEqual(["completed"]);
  });

  it("a partition the role has no grant on goes through tasks", async () => {
    const dueMs = Date.now() - 1000;
    await withPg(fixture.db.url, (c) =>
      c.query(`REVOKE ALL ON ${partitionOf(dueMs)} FROM chronofence_worker`),
    );
    try {
      const refs = await armed([dueMs, dueMs]);
      expect(await run(refs)).toEqual(["completed", "completed"]);
      expect(await statusOf(refs)).toEqual(["COMPLETED", "COMPLETED"]);
    } finally {
      await withPg(fixture.db.url, (c) =>
        c.query("SELECT cf_grant_task_partition($1)", [partitionOf(dueMs)]),
      );
    }
  });
});
