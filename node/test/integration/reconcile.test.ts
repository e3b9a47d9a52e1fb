/**
 * Fencing and reconciliation on the real Postgres and Redis, driven by a fake
 * clock (the adapters take `now` as an argument): a stale shard epoch arms
 * nothing; the reconciler repairs each kind of half-done transition, and a
 * second run right after changes nothing (docs/architecture.md, invariant 8).
 *
 * Each describe has its own database and Redis prefix (the reconciler sweeps
 * every row, so it must see only its own test's), and each fence test starts
 * with no shard leased: no test depends on another having run, or not.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { PgDispatchStore } from "../../src/adapters/pg/dispatch-store.js";
import { PgExecutionStore } from "../../src/adapters/pg/execution-store.js";
import { PgLeaseStore } from "../../src/adapters/pg/lease-store.js";
import type { PgPool } from "../../src/adapters/pg/pool.js";
import { RedisDispatchHotTier } from "../../src/adapters/redis/dispatch-hot-tier.js";
import { Reconciler } from "../../src/app/dispatch/reconciler.js";
import type { Config } from "../../src/config/config.js";
import { claimedKey, dueKey, shardOf } from "../../src/domain/shard.js";
import { noDispatchMetrics } from "../../src/ports/dispatch-metrics.js";
import type { Claim, ShardFence } from "../../src/ports/dispatch-store.js";
import { FakeClock } from "../support/fake-clock.js";
import {
  type ApiFixture,
  call,
  startApiFixture,
  type TestApi,
  type TestTenant,
} from "./support/api.js";
import {
  deleteRedisKeys,
  TEST_REDIS_URL,
  type TestDatabase,
  testPool,
  untilDue,
  withPg,
} from "./support/services.js";

let fixture: ApiFixture;
let db: TestDatabase;
let config: Config;
let api: TestApi;
let tenant: TestTenant;
let redis: Redis;
let pool: PgPool;
let store: PgDispatchStore;
let hotTier: RedisDispatchHotTier;

/** A fresh database, API, Redis prefix and stores for one describe. */
async function setUp(): Promise<void> {
  fixture = await startApiFixture();
  ({ db, config, api, tenant } = fixture);
  redis = new Redis(TEST_REDIS_URL);
  pool = testPool(db.url, "reconcile-test");
  store = new PgDispatchStore(pool);
  hotTier = new RedisDispatchHotTier(redis, config.redisKeyPrefix);
}

async function tearDown(): Promise<void> {
  await pool?.end();
  if (config) await deleteRedisKeys(config.redisKeyPrefix);
  redis?.disconnect();
  await fixture?.stop();
}

async function submit(delayMs: number): Promise<{ id: string; runAtMs: number; shard: number }> {
  const answer = await call(api.baseUrl, "POST", "/v1/tasks", {
    key: tenant.apiKey,
    body: { type: "r", delay_ms: delayMs },
  });
  expect(answer.status).toBe(201);
  const id = answer.body.id as string;
  await untilDue(redis, config.redisKeyPrefix, { tenantId: tenant.id, id }); // before a test's ZREM
  return { id, runAtMs: Date.parse(answer.body.run_at), shard: shardOf(tenant.id, id) };
}

const rowOf = (id: string) =>
  withPg(
    db.url,
    async (c) =>
      (
        await c.query(
          "SELECT status, fencing_token::text AS token, dispatch_epoch::int AS epoch FROM tasks WHERE id = $1",
          [id],
        )
      ).rows[0],
  );

async function redisState(): Promise<Record<string, unknown>> {
  const state: Record<string, unknown> = {};
  for (let shard = 0; shard < 16; shard++) {
    state[`due${shard}`] = await redis.zrange(
      dueKey(config.redisKeyPrefix, shard),
      0,
      -1,
      "WITHSCORES",
    );
    state[`claimed${shard}`] = await redis.zrange(
      claimedKey(config.redisKeyPrefix, shard),
      0,
      -1,
      "WITHSCORES",
    );
  }
  return state;
}

const dbState = () =>
  withPg(
    db.url,
    async (c) =>
      (
        await c.query(
          "SELECT id, status, fencing_token, updated_at, armed_at FROM tasks ORDER BY id",
        )
      ).rows,
  );

const claimOf = (task: { id: string; runAtMs: number }): Claim => ({
  taskId: task.id,
  runAtMs: task.runAtMs,
});

/** One shard's arm, as the dispatcher's round sends it. */
const armOne = async (fence: ShardFence, claims: Claim[], nowMs: number) =>
  (await store.arm([{ fence, claims }], nowMs))[0]!;

describe("fenced arm", () => {
  beforeAll(setUp);
  afterAll(tearDown);
  // Each test takes the shards it needs from scratch (leases hold for the clock that took them).
  beforeEach(async () => {
    await pool.query("DELETE FROM leases");
  });

  it("arms under the current shard epoch only; a stale epoch changes 0 rows", async () => {
    const task = await submit(60_000);
    const leases = new PgLeaseStore(pool);
    const clock = new FakeClock(Date.now());
    const name = `shard:${task.shard}`;
    const epochA = await leases.acquire(name, "node-a", 1000, clock.nowMs());
    expect(epochA).not.toBeNull();
    // A is paused past its lease; B takes the shard (a new epoch).
    clock.advance(1500);
    const epochB = await leases.acquire(name, "node-b", 1000, clock.nowMs());
    expect(epochB).toBe(epochA! + 1);
    const claims = [{ taskId: task.id, runAtMs: task.runAtMs }];

    const stale = await armOne(
      { shard: task.shard, owner: "node-a", epoch: epochA! },
      claims,
      clock.nowMs(),
    );
    expect(stale).toEqual({ fenced: false, armed: [] });
    expect((await rowOf(task.id)).status).toBe("SCHEDULED");

    const fresh = await armOne(
      { shard: task.shard, owner: "node-b", epoch: epochB! },
      claims,
      clock.nowMs(),
    );
    expect(fresh.fenced).toBe(true);
    expect(fresh.armed.map((t) => t.id)).toEqual([task.id]);
    expect(await rowOf(task.id)).toEqual({
      status: "ARMED",
      token: fresh.armed[0]!.fencingToken,
      epoch: epochB,
    });

    // The same epoch cannot arm it twice; a newer epoch of the shard may take it over.
    const again = await armOne(
      { shard: task.shard, owner: "node-b", epoch: epochB! },
      claims,
      clock.nowMs(),
    );
    expect(again).toEqual({ fenced: true, armed: [] });
    clock.advance(1500);
    const epochC = await leases.acquire(name, "node-c", 1000, clock.nowMs());
    const takeover = await armOne(
      { shard: task.shard, owner: "node-c", epoch: epochC! },
      claims,
      clock.nowMs(),
    );
    expect(takeover.armed).toHaveLength(1);
    expect(BigInt(takeover.armed[0]!.fencingToken)).toBeGreaterThan(
      BigInt(fresh.armed[0]!.fencingToken),
    );
  });

  it("one statement for several shards fences each shard on its own", async () => {
    const a = await submit(60_000);
    let b = await submit(60_000);
    while (b.shard === a.shard) b = await submit(60_000);
    const leases = new PgLeaseStore(pool);
    const nowMs = Date.now();
    const epochA = await leases.acquire(`shard:${a.shard}`, "node-m", 60_000, nowMs);
    const staleEpochB = await leases.acquire(`shard:${b.shard}`, "node-m", 60_000, nowMs);
    await leases.release("node-m", [{ name: `shard:${b.shard}`, epoch: staleEpochB! }], nowMs);
    await leases.acquire(`shard:${b.shard}`, "node-other", 60_000, nowMs);

    const [forA, forB] = await store.arm(
      [
        { fence: { shard: a.shard, owner: "node-m", epoch: epochA! }, claims: [claimOf(a)] },
        { fence: { shard: b.shard, owner: "node-m", epoch: staleEpochB! }, claims: [claimOf(b)] },
      ],
      nowMs,
    );
    expect(forA!.fenced).toBe(true);
    expect(forA!.armed.map((t) => t.id)).toEqual([a.id]);
    expect(forB).toEqual({ fenced: false, armed: [] });
    expect((await rowOf(a.id)).status).toBe("ARMED");
    expect((await rowOf(b.id)).status).toBe("SCHEDULED");
  });
});

describe("reconciler", () => {
  beforeAll(setUp);
  afterAll(tearDown);

  it("returns expired claims, re-arms stale ARMED tasks, re-hydrates lost ids — and a second run changes nothing", async () => {
    const lost = await submit(1000);
    const stuck = await submit(1000);
    const claimed = await submit(1000);
    // zombie: a worker started it and then went silent past its execution lease.
    const zombie = await submit(1000);
    const clock = new FakeClock(Date.now() + 600_000);
    // lost: Redis forgot it. stuck: armed long ago, never started. claimed: a dispatcher died holding it.
    await redis.zrem(dueKey(config.redisKeyPrefix, lost.shard), lost.id);
    await withPg(db.url, (c) =>
      c.query(
        "UPDATE tasks SET status = 'ARMED', fencing_token = nextval('fencing_token_seq'), armed_at = run_at WHERE id = $1",
        [stuck.id],
      ),
    );
    await redis.zrem(dueKey(config.redisKeyPrefix, stuck.shard), stuck.id);
    // Out of due before the claim below, which takes everything due in claimed's shard.
    await redis.zrem(dueKey(config.redisKeyPrefix, zombie.shard), zombie.id);
    const [batch] = await hotTier.claim(
      [{ shard: claimed.shard, limit: 2000 }],
      Date.now(),
      5000,
      30_000,
    );
    expect(batch!.claims.map((c) => c.taskId)).toEqual([claimed.id]);
    const stuckToken = (await rowOf(stuck.id)).token;
    await withPg(db.url, (c) =>
      c.query(
        `UPDATE tasks SET status = 'RUNNING', attempt = 1, fencing_token = nextval('fencing_token_seq'),
                lease_owner = 'zombie', lease_expires_at = run_at + interval '30 seconds' WHERE id = $1`,
        [zombie.id],
      ),
    );
    const zombieToken = (await rowOf(zombie.id)).token;

    const executions = new PgExecutionStore(pool, {
      rowLevelSecurity: false,
      random: () => 0.5,
      newId: randomUUID,
    });
    const reconciler = new Reconciler(store, executions, hotTier, clock, noDispatchMetrics, {
      dispatchTimeoutMs: 300_000,
      rehydrateAheadMs: 30_000,
      batchSize: 2,
    });
    const first = await reconciler.run();
    // This describe's own database and prefix: exactly the rows this test broke.
    expect(first.claimsReturned).toBe(1);
    expect(first.rearmed).toBe(1);
    expect(first.leasesExpired).toBe(1);
    // lost and stuck; the zombie's retry too, unless the lease expiry's own add reached Redis
    // first (either way it is there: its score is checked below).
    expect(first.rehydrated).toBeGreaterThanOrEqual(2);
    expect(first.rehydrated).toBeLessThanOrEqual(3);
    const stuckRow = await rowOf(stuck.id);
    expect(stuckRow.status).toBe("SCHEDULED");
    expect(BigInt(stuckRow.token)).toBeGreaterThan(BigInt(stuckToken));
    const zombieRow = await rowOf(zombie.id);
    expect(zombieRow.status).toBe("SCHEDULED");
    expect(BigInt(zombieRow.token)).toBeGreaterThan(BigInt(zombieToken));
    const zombieRef = { tenantId: tenant.id, taskId: zombie.id, fencingToken: zombieToken };
    expect(await executions.complete(zombieRef, "null", clock.nowMs())).toEqual({ kind: "stale" });
    // Retried 0.75 s (attempt 1: base 1000, jitter 0.5) after the reconciler saw it expired.
    expect(await redis.zscore(dueKey(config.redisKeyPrefix, zombie.shard), zombie.id)).toBe(
      String(clock.nowMs() + 750),
    );
    for (const task of [lost, stuck, claimed]) {
      expect(await redis.zscore(dueKey(config.redisKeyPrefix, task.shard), task.id)).toBe(
        String(task.runAtMs),
      );
    }

    const [redisBefore, dbBefore] = [await redisState(), await dbState()];
    const second = await reconciler.run();
    expect(second).toEqual({ claimsReturned: 0, rearmed: 0, leasesExpired: 0, rehydrated: 0 });
    expect(await redisState()).toEqual(redisBefore);
    expect(await dbState()).toEqual(dbBefore);
  });
});
