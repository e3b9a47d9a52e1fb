/**
 * Nothing lost when the pre-loader, the planner or the reconciler leader is
 * killed with -9 while tasks are due (invariant 2). Each role runs twice, as
 * child processes of the built CLI (`chronofence run --roles <role>`); the
 * API, a dispatcher and (but for the reconciler's test) a worker run in the
 * test process. The killed node's leases lapse; the survivor must take them
 * over (a higher epoch) and do the killed node's work:
 *
 *  - pre-loader: the API adds nothing to Redis (hot window 0), so a task
 *    reaches a dispatcher only through a pre-loader. Tasks submitted after the
 *    kill, on the killed node's shards too, all complete.
 *  - planner: a schedule firing every second, planned only a little ahead, on
 *    the shard of the planner that is killed; every occurrence from before the
 *    kill to well after it is planned exactly once and completes.
 *  - reconciler leader: killed together with the worker running tasks; only a
 *    reconciler returns RUNNING tasks whose execution lease expired. The
 *    survivor becomes leader and they complete on a new worker, attempt 2.
 */
import { pino } from "pino";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/adapters/clock/system-clock.js";
import type { Config } from "../../src/config/config.js";
import { type RunningRoles, startDispatchRoles } from "../../src/main/dispatch.js";
import { type RunningWorker, startWorker } from "../../src/main/worker.js";
import { type ApiFixture, call, startApiFixture, submitTask } from "./support/api.js";
import { newTopicPrefix, requireKafka } from "./support/kafka.js";
import { PIPELINE_TIMINGS } from "./support/pipeline.js";
import {
  fixtureEnv,
  killRolesChildren,
  type RolesChild,
  startRolesChild,
} from "./support/roles-child.js";
import { withPg } from "./support/services.js";
import { waitUntil } from "./support/wait.js";

/** The killed node's leases lapse within this; the survivor then takes them at a heartbeat. */
const LEASE_TTL_MS = 3000;
const HEARTBEAT_MS = 300;

interface Running {
  fixture: ApiFixture;
  roles: RunningRoles;
  worker: RunningWorker | null;
}
let running: Running | null = null;

afterEach(async () => {
  killRolesChildren();
  await running?.worker?.stop();
  await running?.roles.stop();
  await running?.fixture.stop();
  running = null;
});
afterAll(() => killRolesChildren());

const logger = pino({ level: process.env.CF_TEST_LOG_LEVEL ?? "silent" });

async function start(name: string, overrides: Partial<Config>, withWorker: boolean) {
  await requireKafka();
  const fixture = await startApiFixture({
    ...PIPELINE_TIMINGS,
    topicPrefix: newTopicPrefix(name),
    ...overrides,
  });
  const roles = await startDispatchRoles(
    fixture.config,
    systemClock,
    logger,
    new Set(["dispatcher"]),
  );
  const worker = withWorker ? await startWorker(fixture.config, systemClock, logger) : null;
  running = { fixture, roles, worker };
  return running;
}

/** Two nodes of `role` on the fixture's database, Redis prefix and topics. */
async function twoNodes(fixture: ApiFixture, role: string, env: Record<string, string> = {}) {
  const node = (id: string) =>
    startRolesChild(role, {
      ...fixtureEnv(fixture, id),
      CF_HORIZON_DAYS: String(fixture.config.horizonDays),
      CF_RETENTION_DAYS: String(fixture.config.retentionDays),
      CF_METRICS_PORT: "0",
      CF_WORKER_METRICS_PORT: "0",
      CF_LEASE_TTL_MS: String(LEASE_TTL_MS),
      CF_LEASE_HEARTBEAT_MS: String(HEARTBEAT_MS),
      CF_LEASE_SAFETY_MARGIN_MS: "1000",
      ...env,
    });
  return [await node(`${role}-a`), await node(`${role}-b`)] as const;
}

interface LeaseRow {
  name: string;
  owner: string;
  epoch: number;
  live: boolean;
}

const leases = (fixture: ApiFixture, pattern: string) =>
  withPg(
    fixture.db.url,
    async (c) =>
      (
        await c.query(
          `SELECT name, owner, epoch::int AS epoch, expires_at > now() AS live
             FROM leases WHERE name LIKE $1 ORDER BY name`,
          [pattern],
        )
      ).rows as LeaseRow[],
  );

const liveBy = (rows: LeaseRow[], owner: string) =>
  rows.filter((r) => r.live && r.owner === owner).map((r) => r.name);

const statusesOf = (fixture: ApiFixture, ids: readonly string[]) =>
  withPg(
    fixture.db.url,
    async (c) =>
      (
        await c.query(
          "SELECT id, status, attempt, hot_shard FROM tasks WHERE id = ANY($1::uuid[]) ORDER BY id",
          [ids],
        )
      ).rows as Array<{ id: string; status: string; attempt: number; hot_shard: number }>,
  );

const allCompleted = (fixture: ApiFixture, ids: readonly string[]) =>
  expect
    .poll(async () => (await statusesOf(fixture, ids)).filter((t) => t.status !== "COMPLETED"), {
      timeout: 90_000,
      interval: 250,
    })
    .toEqual([]);

/** The killed node's leases, now the survivor's at a higher epoch. */
async function expectTakenOver(
  fixture: ApiFixture,
  pattern: string,
  before: LeaseRow[],
  killed: RolesChild,
  survivor: RolesChild,
) {
  const lost = before.filter((r) => r.live && r.owner === killed.nodeId);
  expect(lost.length).toBeGreaterThan(0);
  await waitUntil(
    `${survivor.nodeId} holds ${killed.nodeId}'s leases`,
    () => leases(fixture, pattern),
    (rows) => lost.every((l) => liveBy(rows, survivor.nodeId).includes(l.name)),
    // A TTL for the leases to lapse, a heartbeat to take them, and slack for a loaded machine.
    2 * LEASE_TTL_MS + 10 * HEARTBEAT_MS,
    100,
  );
  const after = await leases(fixture, pattern);
  for (const l of lost) {
    expect(after.find((r) => r.name === l.name)!.epoch).toBeGreaterThan(l.epoch);
  }
}

describe("kill -9", () => {
  it("of a pre-loader: the survivor takes its shards and loads every task due on them", async () => {
    const { fixture } = await start("kill-preloader", { hotWindowMs: 0 }, true);
    // The pre-loaders' window is the API's (0): each sweep reads what fell due since the last.
    const [a, b] = await twoNodes(fixture, "preloader", {
      CF_PRELOAD_INTERVAL_MS: "300",
      CF_HOT_WINDOW_MS: "0",
    });
    const before = await waitUntil(
      "the preload shards split between a and b",
      () => leases(fixture, "preload:%"),
      (rows) =>
        liveBy(rows, a.nodeId).length > 0 &&
        liveBy(rows, b.nodeId).length > 0 &&
        liveBy(rows, a.nodeId).length + liveBy(rows, b.nodeId).length === 16,
      30_000,
    );
    const submit = (delayMs: number) =>
      submitTask(fixture.api.baseUrl, fixture.tenant.apiKey, {
        type: "noop",
        delay_ms: delayMs,
      });
    const early = await Promise.all(Array.from({ length: 10 }, (_, i) => submit(500 + 100 * i)));
    await allCompleted(fixture, early);

    a.process.kill("SIGKILL");
    // Due while a's leases have not lapsed yet, and later: only b can load them.
    const late = await Promise.all(Array.from({ length: 30 }, (_, i) => submit(200 * i)));
    const aShards = new Set(liveBy(before, a.nodeId).map((name) => Number(name.split(":")[1])));
    const onA = (await statusesOf(fixture, late)).filter((t) => aShards.has(t.hot_shard));
    expect(onA.length).toBeGreaterThan(0);
    await expectTakenOver(fixture, "preload:%", before, a, b);
    await allCompleted(fixture, late);
    expect((await a.exited).signal).toBe("SIGKILL");
  }, 240_000);

  it("of the planner of a schedule: the survivor plans every occurrence once", async () => {
    const { fixture } = await start("kill-planner", {}, true);
    // Planned a little ahead only, so the killed planner leaves occurrences unplanned.
    const [a, b] = await twoNodes(fixture, "planner", {
      CF_CRON_PLAN_AHEAD_MS: "1000",
      CF_PLAN_INTERVAL_MS: "200",
    });
    await waitUntil(
      "the plan shards split between a and b",
      () => leases(fixture, "plan:%"),
      (rows) =>
        liveBy(rows, a.nodeId).length > 0 &&
        liveBy(rows, b.nodeId).length > 0 &&
        liveBy(rows, a.nodeId).length + liveBy(rows, b.nodeId).length === 16,
      30_000,
    );
    const created = await call(fixture.api.baseUrl, "POST", "/v1/schedules", {
      key: fixture.tenant.apiKey,
      body: { name: "every-second", expression: "* * * * * *", type: "noop" },
    });
    expect(created.status).toBe(201);
    const scheduleId: string = created.body.id;
    const occurrences = () =>
      withPg(
        fixture.db.url,
        async (c) =>
          (
            await c.query(
              `SELECT (extract(epoch FROM o.scheduled_for) * 1000)::float8 AS ms, t.status
                 FROM schedule_occurrences o LEFT JOIN tasks t ON t.id = o.task_id
                WHERE o.schedule_id = $1 ORDER BY o.scheduled_for`,
              [scheduleId],
            )
          ).rows as Array<{ ms: number; status: string | null }>,
      );
    await expect
      .poll(async () => (await occurrences()).length, { timeout: 30_000 })
      .toBeGreaterThan(2);
    // Kill the planner that plans this schedule now: the one whose count of occurrences grows.
    const counts = () => Promise.all([a, b].map((n) => n.metric("cf_cron_occurrences_total")));
    const [a0, b0] = await counts();
    const [a1] = await waitUntil(
      "a planner planning the schedule",
      counts,
      ([a1, b1]) => a1! > a0! || b1! > b0!,
      30_000,
      200,
    );
    const [planner, other] = a1! > a0! ? [a, b] : [b, a];
    const before = await leases(fixture, "plan:%");
    const plannedAtKill = (await occurrences()).length;
    planner.process.kill("SIGKILL");
    const killedAtMs = Date.now();
    await expectTakenOver(fixture, "plan:%", before, planner, other);
    // Occurrences well past the takeover, then the whole run must have no gap and no repeat.
    await expect
      .poll(async () => (await occurrences()).at(-1)?.ms ?? 0, { timeout: 60_000, interval: 250 })
      .toBeGreaterThan(killedAtMs + 2 * LEASE_TTL_MS + 3000);
    expect(await other.metric("cf_cron_occurrences_total")).toBeGreaterThan(0);
    // The schedule keeps running (its rows go with the test's database): judge the
    // occurrences up to well past the takeover.
    const windowEndMs = killedAtMs + 2 * LEASE_TTL_MS + 3000;
    const inWindow = async () => (await occurrences()).filter((o) => o.ms <= windowEndMs);
    const run = await inWindow();
    expect(run.length).toBeGreaterThan(plannedAtKill);
    // Every second once: no gap across the kill, no repeat (the primary key forbids one).
    const gaps = run.slice(1).filter((o, i) => o.ms - run[i]!.ms !== 1000);
    expect(gaps).toEqual([]);
    await expect
      .poll(async () => (await inWindow()).filter((o) => o.status !== "COMPLETED"), {
        timeout: 90_000,
        interval: 250,
      })
      .toEqual([]);
  }, 240_000);

  it("of the reconciler leader and a worker: the survivor leads and returns the expired tasks", async () => {
    const { fixture } = await start("kill-leader", {}, false);
    const [a, b] = await twoNodes(fixture, "reconciler", { CF_RECONCILE_INTERVAL_MS: "300" });
    const before = await waitUntil(
      "a leader",
      () => leases(fixture, "leader"),
      (rows) => rows.some((r) => r.live),
      30_000,
    );
    const [leader, survivor] = before[0]!.owner === a.nodeId ? [a, b] : [b, a];
    const worker = (id: string) =>
      startRolesChild("worker", {
        ...fixtureEnv(fixture, id),
        CF_WORKER_QUEUES: "standard",
        CF_WORKER_METRICS_PORT: "0",
        CF_WORKER_LEASE_MS: "2000",
        CF_WORKER_HEARTBEAT_MS: "300",
        CF_WORKER_SESSION_TIMEOUT_MS: "6000",
      });
    const victim = await worker("victim");
    const ids = await Promise.all(
      Array.from({ length: 3 }, () =>
        submitTask(fixture.api.baseUrl, fixture.tenant.apiKey, {
          type: "sleep",
          payload: { ms: 60_000 },
          max_attempts: 3,
          backoff: { base_ms: 100, max_ms: 100 },
        }),
      ),
    );
    await expect
      .poll(async () => (await statusesOf(fixture, ids)).map((t) => t.status), {
        timeout: 60_000,
        interval: 100,
      })
      .toEqual(["RUNNING", "RUNNING", "RUNNING"]);
    leader.process.kill("SIGKILL");
    victim.process.kill("SIGKILL");
    await victim.exited;
    await expectTakenOver(fixture, "leader", before, leader, survivor);
    // Returned by the survivor (attempt 1 failed as expired, retried): each runs again, a
    // minute's sleep again, so each is seen RUNNING its second attempt on the new worker.
    await worker("rescuer");
    await expect
      .poll(async () => (await statusesOf(fixture, ids)).map((t) => [t.status, t.attempt]), {
        timeout: 60_000,
        interval: 250,
      })
      .toEqual(ids.map(() => ["RUNNING", 2]));
    expect(
      await survivor.metric("cf_reconcile_leases_expired_total", 'outcome="retrying"'),
    ).toBeGreaterThanOrEqual(3);
  }, 240_000);
});
