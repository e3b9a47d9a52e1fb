/**
 * The cron planner on the real Postgres and Redis, driven by a fake clock
 * (every adapter takes `now` as an argument, so no test sleeps for time to
 * pass): every occurrence exactly once with two planners running at once and
 * handing shards over; a replayed or stale write creates nothing; each
 * misfire policy after a simulated outage; pause and resume; overlap
 * policies; delete cancels what has not started.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { PgLeaseStore } from "../../src/adapters/pg/lease-store.js";
import { PgPlanStore } from "../../src/adapters/pg/plan-store.js";
import { createPgPool, type PgPool } from "../../src/adapters/pg/pool.js";
import { PgScheduleStore } from "../../src/adapters/pg/schedule-store.js";
import { RedisHotTier } from "../../src/adapters/redis/hot-tier.js";
import {
  PLAN_FAMILY,
  Planner,
  type PlannerOptions,
  planLeasesOf,
} from "../../src/app/schedules/planner.js";
import { ScheduleService } from "../../src/app/schedules/schedules.js";
import { LeaseManager } from "../../src/app/shared/leases.js";
import { DEFAULT_KEY_SCOPES } from "../../src/domain/api-keys.js";
import { dueKey, shardOf } from "../../src/domain/shard.js";
import { DEFAULT_TENANT_LIMITS, type Principal } from "../../src/domain/tenant.js";
import { uuidv7From } from "../../src/main/ids.js";
import { noDispatchMetrics } from "../../src/ports/dispatch-metrics.js";
import { StalePlanLeaseError } from "../../src/ports/plan-store.js";
import { FakeClock } from "../support/fake-clock.js";
import { newTenant } from "./support/api.js";
import {
  deleteRedisKeys,
  migratedDatabase,
  requireRedis,
  TEST_REDIS_URL,
  type TestDatabase,
  testConfig,
  withPg,
} from "./support/services.js";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
// A whole minute a little ahead of real time, so that the day partitions made by migration exist.
const START_MS = Math.ceil((Date.now() + 5 * MINUTE) / MINUTE) * MINUTE;

let db: TestDatabase;
let plannerPool: PgPool;
let apiPool: PgPool;
let redis: Redis;
let prefix: string;
let principal: Principal;
const clock = new FakeClock(START_MS);
const stops: Array<() => Promise<void>> = [];

const pool = (role: string | null, name: string) =>
  createPgPool({
    connectionString: db.url,
    maxConnections: 4,
    statementTimeoutMs: 10_000,
    connectTimeoutMs: 2000,
    role,
    applicationName: name,
    onError: () => undefined,
  });

beforeAll(async () => {
  await requireRedis();
  db = await migratedDatabase(clock);
  const config = testConfig(db.url);
  prefix = config.redisKeyPrefix;
  const tenant = await newTenant(config);
  principal = {
    tenantId: tenant.id,
    apiKeyId: tenant.apiKeyId,
    limits: DEFAULT_TENANT_LIMITS,
    scopes: DEFAULT_KEY_SCOPES,
  };
  // The planners assume their least-privilege role, as the planner role does (migrations/000011).
  plannerPool = pool("chronofence_planner", "planner-test-planner");
  apiPool = pool("chronofence_api", "planner-test-api");
  redis = new Redis(TEST_REDIS_URL);
});

afterAll(async () => {
  for (const stop of stops) await stop();
  await apiPool?.end();
  await plannerPool?.end();
  if (prefix) await deleteRedisKeys(prefix);
  redis?.disconnect();
  await db?.drop();
});

const service = () =>
  new ScheduleService(
    new PgScheduleStore(apiPool),
    { cancelled: async () => undefined },
    clock,
    uuidv7From(clock),
  );

let seq = 0;
async function createSchedule(body: Record<string, unknown>): Promise<string> {
  const created = await service().create(
    principal,
    { name: `s${++seq}`, type: "cron.test", ...body },
    `req-${seq}`,
  );
  return created.id;
}

const OPTIONS: Omit<PlannerOptions, "nodeId"> = {
  planAheadMs: 30 * SECOND,
  overlapLeadMs: 3 * SECOND,
  misfireGraceMs: MINUTE,
  fireAllCap: 5,
  maxPerPass: 1000,
  batchSize: 50,
  hotWindowMs: 60 * MINUTE,
};

interface TestPlanner {
  planner: Planner;
  leases: LeaseManager;
  stop(): Promise<void>;
}

function startPlanner(nodeId: string): TestPlanner {
  const leases = new LeaseManager(new PgLeaseStore(plannerPool), clock, noDispatchMetrics, {
    nodeId,
    ttlMs: 10 * SECOND,
    safetyMarginMs: 2 * SECOND,
    families: [PLAN_FAMILY],
    wantLeader: false,
  });
  const planner = new Planner(
    new PgPlanStore(plannerPool),
    new RedisHotTier(redis, prefix),
    clock,
    uuidv7From(clock),
    planLeasesOf(leases),
    {
      planned: () => undefined,
      misfired: () => undefined,
      released: () => undefined,
      staleLease: () => undefined,
    },
    { ...OPTIONS, nodeId },
    (error) => {
      throw error;
    },
  );
  const stop = () => leases.releaseAll();
  stops.push(stop);
  return { planner, leases, stop };
}

/**
 * Heartbeats until the plan shards are split evenly between `planners`
 * (releases above a share complete asynchronously, hence the short waits).
 */
async function settle(...planners: TestPlanner[]): Promise<void> {
  for (let round = 0; round < 50; round++) {
    for (const p of planners) await p.leases.heartbeat();
    const counts = planners.map((p) => planLeasesOf(p.leases).owned().length);
    if (counts.every((n) => n === 16 / planners.length)) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("plan shards were not split between the planners");
}

interface OccurrenceRow {
  scheduled_for_ms: number;
  outcome: string;
  catch_up: boolean;
  task_id: string | null;
  status: string | null;
  run_at_ms: number | null;
}

const occurrencesOf = (scheduleId: string) =>
  withPg(db.url, async (c) => {
    const result = await c.query(
      `SELECT (extract(epoch FROM o.scheduled_for) * 1000)::float8 AS scheduled_for_ms, o.outcome,
              o.catch_up, o.task_id, t.status, (extract(epoch FROM t.run_at) * 1000)::float8 AS run_at_ms
         FROM schedule_occurrences o LEFT JOIN tasks t ON t.id = o.task_id AND t.run_at = o.task_run_at
        WHERE o.schedule_id = $1 ORDER BY o.scheduled_for`,
      [scheduleId],
    );
    return result.rows as OccurrenceRow[];
  });

const tasksOf = (scheduleId: string) =>
  withPg(
    db.url,
    async (c) =>
      (await c.query("SELECT id, status FROM tasks WHERE schedule_id = $1", [scheduleId]))
        .rows as Array<{
        id: string;
        status: string;
      }>,
  );

const setTaskStatus = (taskId: string, status: string) =>
  withPg(db.url, (c) => c.query("UPDATE tasks SET status = $2 WHERE id = $1", [taskId, status]));

beforeEach(async () => {
  clock.set(START_MS);
  // Each test starts from the same instant: leases left by the previous one would look live.
  await withPg(db.url, (c) => c.query("DELETE FROM leases"));
});

describe("exactly once", () => {
  it("two planners running concurrently, handing shards over, plan every occurrence once", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 24; i++)
      ids.push(await createSchedule({ expression: "*/5 * * * * *", jitter_ms: 700 }));
    const a = startPlanner("planner-a");
    const b = startPlanner("planner-b");
    await settle(a, b);
    expect(planLeasesOf(a.leases).owned().length).toBeGreaterThan(0);
    expect(planLeasesOf(b.leases).owned().length).toBeGreaterThan(0);
    // 12 rounds of 2.5 s: every 5-second occurrence is planned several passes in a row.
    for (let round = 0; round < 12; round++) {
      // Both pass at the same moment; midway A stops and B takes all shards.
      if (round === 6) {
        await a.stop();
        await settle(b);
      }
      const passes = [b.planner.pass()];
      if (round < 6) passes.push(a.planner.pass());
      await Promise.all(passes);
      clock.advance(2500);
      await Promise.all((round < 6 ? [a, b] : [b]).map((p) => p.leases.heartbeat()));
    }
    // A fresh planner on the same database (a restart) adds nothing already planned.
    const c = startPlanner("planner-c");
    await b.stop();
    await settle(c);
    await c.planner.pass();

    const endMs = clock.nowMs() + OPTIONS.planAheadMs;
    for (const id of ids) {
      const occurrences = await occurrencesOf(id);
      const expected: number[] = [];
      for (let t = START_MS + 5 * SECOND; t <= endMs; t += 5 * SECOND) expected.push(t);
      expect(occurrences.map((o) => o.scheduled_for_ms)).toEqual(expected);
      const tasks = await tasksOf(id);
      expect(tasks.length).toBe(expected.length);
      expect(new Set(occurrences.map((o) => o.task_id))).toEqual(new Set(tasks.map((t) => t.id)));
      for (const o of occurrences) {
        expect(o.run_at_ms! - o.scheduled_for_ms).toBeGreaterThanOrEqual(0);
        expect(o.run_at_ms! - o.scheduled_for_ms).toBeLessThanOrEqual(700);
      }
    }
  }, 90_000);

  it("a replayed or concurrent write of the same pass creates each task once; a stale lease writes nothing", async () => {
    const id = await createSchedule({ expression: "* * * * * *" });
    const store = new PgPlanStore(plannerPool);
    const leaseStore = new PgLeaseStore(plannerPool);
    const name = `${PLAN_FAMILY}:replay-test`;
    const epoch = (await leaseStore.acquire(name, "replayer", 60_000, clock.nowMs()))!;
    const version = Number(
      (await withPg(db.url, (c) => c.query("SELECT version FROM schedules WHERE id = $1", [id])))
        .rows[0].version,
    );
    const newId = uuidv7From(clock);
    const write = () =>
      store.commit(
        "replayer",
        [{ name, epoch }],
        [
          {
            id,
            version,
            plannedThroughMs: START_MS + 3 * SECOND,
            nextOccurrenceMs: START_MS + 4 * SECOND,
          },
        ],
        [1, 2, 3].map((s) => ({
          scheduleId: id,
          scheduledForMs: START_MS + s * SECOND,
          outcome: "planned" as const,
          taskId: newId(), // each attempt brings fresh task ids, as a second planner would
          runAtMs: START_MS + s * SECOND,
          catchUp: false,
        })),
        clock.nowMs(),
      );
    const created = await Promise.all([write(), write(), write()]);
    expect(created.map((c) => c.length).sort()).toEqual([0, 0, 3]);
    expect((await write()).length).toBe(0);
    expect(await tasksOf(id)).toHaveLength(3);

    await leaseStore.acquire(name, "usurper", 60_000, clock.nowMs() + 120_000);
    await expect(write()).rejects.toBeInstanceOf(StalePlanLeaseError);
    expect(await tasksOf(id)).toHaveLength(3);
  });

  it("puts planned tasks due within the hot window into their Redis shard", async () => {
    const id = await createSchedule({ expression: "*/10 * * * * *" });
    const p = startPlanner("planner-hot");
    await settle(p);
    await p.planner.pass();
    const tasks = await tasksOf(id);
    expect(tasks.length).toBe(3);
    await expect
      .poll(async () => {
        const scores = await Promise.all(
          tasks.map((t) => redis.zscore(dueKey(prefix, shardOf(principal.tenantId, t.id)), t.id)),
        );
        return scores.every((s) => s !== null);
      })
      .toBe(true);
    await p.stop();
  });
});

describe("misfire policies after an outage", () => {
  it("skip, fire_once and fire_all (capped) after the planner was down 30 minutes", async () => {
    const skip = await createSchedule({ expression: "* * * * *", misfire_policy: "skip" });
    const once = await createSchedule({ expression: "* * * * *", misfire_policy: "fire_once" });
    const all = await createSchedule({ expression: "* * * * *", misfire_policy: "fire_all" });
    const p = startPlanner("planner-outage");
    await settle(p);
    await p.planner.pass();
    for (const id of [skip, once, all]) expect((await occurrencesOf(id)).length).toBe(0); // next is a minute away
    await p.stop();

    // The planner is down for 30 minutes and 20 seconds; then it restarts.
    clock.advance(30 * MINUTE + 20 * SECOND);
    const restarted = startPlanner("planner-outage-2");
    await settle(restarted);
    await restarted.planner.pass();
    const nowMs = clock.nowMs();
    const minute = (o: OccurrenceRow) => (o.scheduled_for_ms - START_MS) / MINUTE;

    const skipped = await occurrencesOf(skip);
    expect(skipped.filter((o) => o.catch_up)).toEqual([]);
    // Minute 30 is 20 s late, within the grace: it runs as usual; 1..29 do not.
    expect(skipped.map(minute)).toEqual([30]);

    const fired = await occurrencesOf(once);
    const catchUp = fired.filter((o) => o.catch_up);
    expect(catchUp.map(minute)).toEqual([29]);
    expect(catchUp[0]!.run_at_ms).toBe(nowMs);
    expect(fired.filter((o) => !o.catch_up).map(minute)).toEqual([30]);

    const firedAll = await occurrencesOf(all);
    expect(firedAll.filter((o) => o.catch_up).map(minute)).toEqual([25, 26, 27, 28, 29]);
    expect(firedAll.filter((o) => o.catch_up).every((o) => o.run_at_ms === nowMs)).toBe(true);

    // A second pass (or a replay after a crash) adds no further catch-ups.
    await restarted.planner.pass();
    expect((await occurrencesOf(all)).filter((o) => o.catch_up)).toHaveLength(5);
    await restarted.stop();
  });
});

describe("pause and resume", () => {
  it("pausing cancels the unstarted future, plans nothing while paused, and resuming does not catch up", async () => {
    const id = await createSchedule({ expression: "*/10 * * * * *" });
    const p = startPlanner("planner-pause");
    await settle(p);
    await p.planner.pass();
    const before = await tasksOf(id);
    expect(before.length).toBe(3);

    const paused = await service().update(principal, id, { paused: true }, "pause");
    expect(paused.cancelledTaskIds.sort()).toEqual(before.map((t) => t.id).sort());
    expect((await tasksOf(id)).every((t) => t.status === "CANCELLED")).toBe(true);

    clock.advance(5 * MINUTE);
    await p.leases.heartbeat();
    await p.planner.pass();
    expect((await occurrencesOf(id)).length).toBe(0);

    await service().update(principal, id, { paused: false }, "resume");
    await p.planner.pass();
    const after = await occurrencesOf(id);
    const resumedAt = clock.nowMs();
    expect(after.length).toBe(3);
    expect(after.every((o) => o.scheduled_for_ms > resumedAt && !o.catch_up)).toBe(true);
    await p.stop();
  });

  it("changing the expression re-plans what has not started; delete cancels the rest", async () => {
    const id = await createSchedule({ expression: "*/10 * * * * *" });
    const p = startPlanner("planner-edit");
    await settle(p);
    await p.planner.pass();
    const first = await occurrencesOf(id);
    await setTaskStatus(first[0]!.task_id!, "RUNNING"); // a worker started it (simulated in SQL)

    await service().update(principal, id, { expression: "*/15 * * * * *" }, "edit");
    await p.planner.pass();
    const replanned = await occurrencesOf(id);
    expect(replanned.map((o) => (o.scheduled_for_ms - START_MS) / SECOND)).toEqual([10, 15, 30]);
    expect(replanned[0]!.status).toBe("RUNNING");

    const deleted = await service().delete(principal, id, "delete");
    expect(deleted.cancelledTaskIds).toHaveLength(2);
    const statuses = (await tasksOf(id)).map((t) => t.status).sort();
    expect(statuses).toEqual(["CANCELLED", "CANCELLED", "CANCELLED", "CANCELLED", "RUNNING"]);
    await p.stop();
  });
});

describe("overlap policies", () => {
  /**
   * Plans the occurrence at START+60 s; the previous one (START+0… the first
   * planned) is put in RUNNING with SQL, standing in for a worker.
   */
  async function secondOccurrence(policy: string) {
    const id = await createSchedule({ expression: "*/30 * * * * *", overlap_policy: policy });
    const p = startPlanner(`planner-overlap-${policy}`);
    await settle(p);
    clock.set(START_MS + 28 * SECOND); // 2 s before the first occurrence: inside the lead
    await settle(p);
    await p.planner.pass();
    const [first] = await occurrencesOf(id);
    expect(first!.outcome).toBe("planned");
    await setTaskStatus(first!.task_id!, "RUNNING");
    clock.set(START_MS + 58 * SECOND);
    await settle(p);
    await p.planner.pass();
    return { id, p, first: { ...first!, task_id: first!.task_id! } };
  }

  it("skip: the next occurrence is skipped while the previous runs, planned once it is done", async () => {
    const { id, p, first } = await secondOccurrence("skip");
    expect((await occurrencesOf(id)).map((o) => o.outcome)).toEqual(["planned", "skipped_overlap"]);
    await setTaskStatus(first.task_id, "COMPLETED");
    clock.set(START_MS + 88 * SECOND);
    await settle(p);
    await p.planner.pass();
    expect((await occurrencesOf(id)).map((o) => o.outcome)).toEqual([
      "planned",
      "skipped_overlap",
      "planned",
    ]);
    await p.stop();
  });

  it("buffer_one: one occurrence waits, a second one is skipped, the buffered one runs once the previous ends", async () => {
    const { id, p, first } = await secondOccurrence("buffer_one");
    let occurrences = await occurrencesOf(id);
    expect(occurrences.map((o) => [o.outcome, o.status])).toEqual([
      ["planned", "RUNNING"],
      ["buffered", "WAITING"],
    ]);
    clock.set(START_MS + 88 * SECOND);
    await settle(p);
    await p.planner.pass();
    occurrences = await occurrencesOf(id);
    expect(occurrences.map((o) => o.outcome)).toEqual(["planned", "buffered", "skipped_overlap"]);

    await setTaskStatus(first.task_id, "COMPLETED");
    clock.advance(SECOND);
    await p.planner.pass();
    occurrences = await occurrencesOf(id);
    expect(occurrences[1]).toMatchObject({ outcome: "released", status: "SCHEDULED" });
    expect(occurrences[1]!.run_at_ms).toBe(clock.nowMs());
    // GET /v1/schedules/{id} shows the same history, newest first, with each task's status.
    const view = await service().get(principal, id, "10");
    expect(view.history.map((o) => [o.outcome, o.status])).toEqual([
      ["skipped_overlap", null],
      ["released", "SCHEDULED"],
      ["planned", "COMPLETED"],
    ]);
    await p.stop();
  });

  it("allow: plans regardless of a running previous occurrence", async () => {
    const { id, p } = await secondOccurrence("allow");
    expect((await occurrencesOf(id)).every((o) => o.outcome === "planned")).toBe(true);
    await p.stop();
  });
});
