/**
 * The dispatcher's arm runs on the claims' day partition as a prepared
 * statement (dispatch-store.ts, day-partition.ts, migrations/000023), as
 * the dispatch role: Postgres keeps a generic plan for it instead of
 * planning each claim round. Claims across midnight and a partition the
 * role holds no grant on go through `tasks` and arm the same; a stale fence
 * still arms nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgDispatchStore } from "../../src/adapters/pg/dispatch-store.js";
import { PgLeaseStore } from "../../src/adapters/pg/lease-store.js";
import type { PgPool } from "../../src/adapters/pg/pool.js";
import { taskIdInShard } from "../support/task-ids.js";
import { startTenantFixture, type TenantFixture } from "./support/api.js";
import { onePreparingConnection, partitionOf, preparedStatements } from "./support/prepared.js";
import { withPg } from "./support/services.js";

const DAY_MS = 86_400_000;
const SHARD = 3;
const OWNER = "prepared-arm-test";
let fixture: TenantFixture;
let pool: PgPool;
let store: PgDispatchStore;
let epoch: number;

beforeAll(async () => {
  fixture = await startTenantFixture();
  pool = onePreparingConnection(fixture.db.url, "chronofence_dispatch", "prepared-arm-test");
  store = new PgDispatchStore(pool);
  const acquired = await new PgLeaseStore(pool).acquire(
    `shard:${SHARD}`,
    OWNER,
    DAY_MS,
    Date.now(),
  );
  if (acquired === null) throw new Error("the shard lease is held by someone else");
  epoch = acquired;
});

afterAll(async () => {
  await pool?.end();
  await fixture?.db.drop();
});

/** SCHEDULED tasks due at `runAtMs`; their claims. */
async function scheduled(runAtMs: number[]) {
  // A claim comes from its task's shard's due set: the ids are SHARD's.
  const claims = runAtMs.map((ms) => ({
    taskId: taskIdInShard(fixture.tenant.id, SHARD),
    runAtMs: ms,
  }));
  await withPg(fixture.db.url, (c) =>
    c.query(
      `INSERT INTO tasks (id, tenant_id, type, payload, priority, status, run_at,
                          max_attempts, timeout_ms, backoff_strategy, backoff_base_ms,
                          backoff_max_ms, created_at, updated_at)
       SELECT r.id, $1, 'noop', '{}', 'standard', 'SCHEDULED', to_timestamp(r.ms / 1000.0),
              3, 30000, 'exponential', 1000, 60000, now(), now()
         FROM unnest($2::uuid[], $3::float8[]) AS r (id, ms)`,
      [fixture.tenant.id, claims.map((c) => c.taskId), claims.map((c) => c.runAtMs)],
    ),
  );
  return claims;
}

const arm = (claims: Array<{ taskId: string; runAtMs: number }>, fenceEpoch = epoch) =>
  store.arm([{ fence: { shard: SHARD, owner: OWNER, epoch: fenceEpoch }, claims }], Date.now());

const statusOf = async (ids: string[]) =>
  withPg(fixture.db.url, async (c) => {
    const { rows } = await c.query(
      "SELECT status FROM tasks WHERE id = ANY ($1::uuid[]) ORDER BY status",
      [ids],
    );
    return rows.map((r) => r.status);
  });

describe("the arm, prepared on the day's partition", () => {
  it("arms a day's claim rounds through its partition, planned once for all of them", async () => {
    const dueMs = Date.now() + 60_000;
    const day = partitionOf(dueMs).slice("tasks_p".length);
    for (let round = 0; round < 8; round++) {
      const claims = await scheduled(round % 2 === 0 ? [dueMs] : [dueMs, dueMs + 1]);
      const [result] = await arm(claims);
      expect(result?.fenced).toBe(true);
      expect(result?.armed.map((t) => t.id).sort()).toEqual(claims.map((c) => c.taskId).sort());
      expect(await statusOf(claims.map((c) => c.taskId))).toEqual(claims.map(() => "ARMED"));
    }
    const prepared = (await preparedStatements(pool)).find((p) => p.name === `cf_arm_tasks_${day}`);
    expect(prepared && prepared.custom_plans + prepared.generic_plans).toBe(8);
    expect(prepared?.generic_plans).toBeGreaterThanOrEqual(1);
  });

  it("a stale fence arms nothing through the partition either", async () => {
    const claims = await scheduled([Date.now() + 60_000]);
    const [result] = await arm(claims, epoch - 1);
    expect(result).toEqual({ fenced: false, armed: [] });
    expect(await statusOf(claims.map((c) => c.taskId))).toEqual(["SCHEDULED"]);
  });

  it("claims across midnight go through tasks", async () => {
    const nowMs = Date.now();
    const yesterdayMs = Math.floor(nowMs / DAY_MS) * DAY_MS - 1;
    const claims = await scheduled([yesterdayMs, nowMs + 60_000]);
    const [result] = await arm(claims);
    expect(result?.armed).toHaveLength(2);
    expect((await preparedStatements(pool)).map((p) => p.name)).not.toContain(
      `cf_arm_tasks_${partitionOf(yesterdayMs).slice("tasks_p".length)}`,
    );
  });

  it("a partition the role has no grant on goes through tasks", async () => {
    const dueMs = Date.now() + 60_000;
    await withPg(fixture.db.url, (c) =>
      c.query(`REVOKE ALL ON ${partitionOf(dueMs)} FROM chronofence_dispatch`),
    );
    try {
      const claims = await scheduled([dueMs, dueMs]);
      const [result] = await arm(claims);
      expect(result?.armed).toHaveLength(2);
      expect(await statusOf(claims.map((c) => c.taskId))).toEqual(["ARMED", "ARMED"]);
    } finally {
      await withPg(fixture.db.url, (c) =>
        c.query("SELECT cf_grant_task_partition($1)", [partitionOf(dueMs)]),
      );
    }
  });
});
