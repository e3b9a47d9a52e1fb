/**
 * The pre-loader on the real Postgres and Redis: owning shards {a, b}, it adds
 * exactly those shards' SCHEDULED tasks due inside the hot window to their due
 * sets and nothing to the other fourteen (Postgres filters by the stored
 * tasks.hot_shard), page after page; later sweeps read only the tasks that
 * entered the window since, until the shards' keys are flushed. Tasks
 * written with their shard (cf_insert_tasks, as the API does) and without it
 * (the trigger fills it in) are both found, and the trigger's SQL hash agrees
 * with shardOf.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgDispatchStore } from "../../src/adapters/pg/dispatch-store.js";
import { createPgPool, type PgPool } from "../../src/adapters/pg/pool.js";
import { PgTaskStore } from "../../src/adapters/pg/task-store.js";
import { RedisDispatchHotTier } from "../../src/adapters/redis/dispatch-hot-tier.js";
import { Preloader } from "../../src/app/dispatch/preloader.js";
import { dueKey, HOT_SHARD_COUNT, shardOf } from "../../src/domain/shard.js";
import { noDispatchMetrics } from "../../src/ports/dispatch-metrics.js";
import type { InsertRequest } from "../../src/ports/task-store.js";
import { FakeClock } from "../support/fake-clock.js";
import {
  deleteRedisKeys,
  migratedDatabase,
  TEST_REDIS_URL,
  type TestDatabase,
  testConfig,
  withPg,
} from "./support/services.js";

const MINUTE_MS = 60_000;
const HOT_WINDOW_MS = 60 * MINUTE_MS;
const OWNED = [5, 12] as const;

interface Seeded {
  id: string;
  tenantId: string;
  runAtMs: number;
  shard: number;
  /** through cf_insert_tasks (hot_shard passed) or a bare INSERT (trigger fills it) */
  path: "api" | "bare";
  kind: "due" | "later" | "armed";
}

/** Per shard: five SCHEDULED tasks due in the window (three via the API's path), one due after it, one ARMED. */
const PER_SHARD: ReadonlyArray<Pick<Seeded, "path" | "kind">> = [
  { path: "api", kind: "due" },
  { path: "api", kind: "due" },
  { path: "api", kind: "due" },
  { path: "bare", kind: "due" },
  { path: "bare", kind: "due" },
  { path: "api", kind: "later" },
  { path: "bare", kind: "armed" },
];

const clock = new FakeClock(Date.now());
const tenants = [randomUUID(), randomUUID()];
let db: TestDatabase;
let prefix: string;
let redis: Redis;
let ownerPool: PgPool;
let apiPool: PgPool;
let seeded: Seeded[];

const pool = (url: string, role: string | null) =>
  createPgPool({
    connectionString: url,
    maxConnections: 2,
    statementTimeoutMs: 5000,
    connectTimeoutMs: 2000,
    role,
    applicationName: "preload-test",
    onError: () => undefined,
  });

beforeAll(async () => {
  db = await migratedDatabase(clock);
  prefix = testConfig(db.url).redisKeyPrefix;
  redis = new Redis(TEST_REDIS_URL);
  ownerPool = pool(db.url, null);
  apiPool = pool(db.url, "chronofence_api");
  seeded = seedPlan();
  await insertViaApiPath(seeded.filter((t) => t.path === "api"));
  await insertBare(seeded.filter((t) => t.path === "bare"));
});

afterAll(async () => {
  await ownerPool?.end();
  await apiPool?.end();
  if (prefix) await deleteRedisKeys(prefix);
  redis?.disconnect();
  await db?.drop();
});

/** Random ids until every shard has one task of each PER_SHARD slot. */
function seedPlan(): Seeded[] {
  const nowMs = clock.nowMs();
  const filled = new Map<number, Seeded[]>();
  let step = 0;
  let count = 0;
  while (count < HOT_SHARD_COUNT * PER_SHARD.length) {
    const tenantId = tenants[step++ % tenants.length]!;
    const id = randomUUID();
    const shard = shardOf(tenantId, id);
    const slots = filled.get(shard) ?? [];
    if (slots.length === PER_SHARD.length) continue;
    const slot = PER_SHARD[slots.length]!;
    // Due: from five minutes overdue to 55 minutes ahead; later: past the window's end.
    const runAtMs =
      slot.kind === "later"
        ? nowMs + HOT_WINDOW_MS + 10 * MINUTE_MS
        : nowMs - 5 * MINUTE_MS + slots.length * 10 * MINUTE_MS;
    slots.push({ id, tenantId, runAtMs, shard, ...slot });
    count++;
    filled.set(shard, slots);
  }
  return [...filled.values()].flat();
}

async function insertViaApiPath(tasks: readonly Seeded[]): Promise<void> {
  const rows: InsertRequest[] = tasks.map((t) => ({
    draft: {
      id: t.id,
      tenantId: t.tenantId,
      type: "preload",
      payloadJson: "{}",
      priority: "standard",
      runAtMs: t.runAtMs,
      maxAttempts: 3,
      timeoutMs: 30_000,
      backoff: { strategy: "fixed", baseMs: 1000, maxMs: 1000 },
      idempotencyKey: null,
      createdAtMs: clock.nowMs(),
    },
    requestHash: null,
    apiKeyId: randomUUID(),
    requestId: "preload-test",
  }));
  const outcomes = await new PgTaskStore(apiPool).insertMany(rows, clock.nowMs());
  expect(outcomes.every((o) => o.kind === "created")).toBe(true);
}

/** Without hot_shard, as any writer that does not know it would. */
async function insertBare(tasks: readonly Seeded[]): Promise<void> {
  await ownerPool.query(
    `INSERT INTO tasks (id, tenant_id, type, payload, priority, status, run_at, max_attempts,
                        timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
                        created_at, updated_at)
     SELECT id, tenant_id, 'preload', '{}', 'standard', status,
            timestamptz 'epoch' + run_at_ms * interval '1 millisecond', 3, 30000, 'fixed', 1000,
            1000, now(), now()
       FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::float8[])
            AS i (id, tenant_id, status, run_at_ms)`,
    [
      tasks.map((t) => t.id),
      tasks.map((t) => t.tenantId),
      tasks.map((t) => (t.kind === "armed" ? "ARMED" : "SCHEDULED")),
      tasks.map((t) => t.runAtMs),
    ],
  );
}

async function dueSets(): Promise<Map<number, Map<string, number>>> {
  const sets = new Map<number, Map<string, number>>();
  for (let shard = 0; shard < HOT_SHARD_COUNT; shard++) {
    const flat = await redis.zrange(dueKey(prefix, shard), 0, -1, "WITHSCORES");
    const members = new Map<string, number>();
    for (let i = 0; i < flat.length; i += 2) members.set(flat[i]!, Number(flat[i + 1]));
    sets.set(shard, members);
  }
  return sets;
}

describe("tasks.hot_shard", () => {
  it("is shardOf(tenant, id) for rows written with it and rows the trigger filled in", async () => {
    const stored = await withPg(
      db.url,
      async (c) =>
        (await c.query("SELECT id, hot_shard FROM tasks")).rows as Array<{
          id: string;
          hot_shard: number;
        }>,
    );
    expect(stored).toHaveLength(seeded.length);
    const shardById = new Map(seeded.map((t) => [t.id, t.shard]));
    for (const row of stored) expect(row.hot_shard, row.id).toBe(shardById.get(row.id));
  });

  it("cf_hot_shard agrees with shardOf", async () => {
    const pairs = Array.from({ length: 2000 }, () => [randomUUID(), randomUUID()] as const);
    const sql = (
      await ownerPool.query(
        "SELECT cf_hot_shard(t, i) AS shard FROM unnest($1::uuid[], $2::uuid[]) WITH ORDINALITY AS p (t, i, n) ORDER BY n",
        [pairs.map((p) => p[0]), pairs.map((p) => p[1])],
      )
    ).rows.map((r) => r.shard);
    expect(sql).toEqual(pairs.map(([tenantId, id]) => shardOf(tenantId, id)));
  });
});

describe("a pre-loader owning shards {a, b}", () => {
  it("loads exactly their SCHEDULED tasks due inside the hot window; then only what enters it; whole again after a flush", async () => {
    const preloader = new Preloader(
      new PgDispatchStore(ownerPool),
      new RedisDispatchHotTier(redis, prefix),
      clock,
      noDispatchMetrics,
      () => new Set(OWNED),
      // Two per shard per page: each shard's five due tasks take three pages.
      { hotWindowMs: HOT_WINDOW_MS, pageSize: 4 },
    );
    const expected = new Map<number, Map<string, number>>();
    for (let shard = 0; shard < HOT_SHARD_COUNT; shard++) expected.set(shard, new Map());
    const add = (kind: Seeded["kind"]) => {
      for (const t of seeded) {
        if (t.kind === kind && (OWNED as readonly number[]).includes(t.shard))
          expected.get(t.shard)!.set(t.id, t.runAtMs);
      }
    };
    add("due");

    expect(await preloader.sweep()).toBe(OWNED.length * 5);
    expect(await dueSets()).toEqual(expected);

    // Nothing entered the window since: a sweep reads nothing.
    expect(await preloader.sweep()).toBe(0);
    expect(await dueSets()).toEqual(expected);

    // 20 minutes on, each shard's "later" task (70 min ahead at the start) is inside: only it is read.
    clock.advance(20 * MINUTE_MS);
    add("later");
    expect(await preloader.sweep()).toBe(OWNED.length);
    expect(await dueSets()).toEqual(expected);

    // This test's keys flushed (the shared Redis keeps everyone else's): the epochs went with them.
    await deleteRedisKeys(prefix);
    expect(await preloader.sweep()).toBe(OWNED.length * 6);
    expect(await dueSets()).toEqual(expected);
  });
});
