/**
 * Real Postgres and Redis for integration tests. Each test file gets its own
 * database (created, migrated, dropped) and its own Redis key prefix (keys
 * deleted after). A missing service fails the suite with how to start it.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import pg from "pg";
import { systemClock } from "../../../src/adapters/clock/system-clock.js";
import { createPgPool, type PgPool } from "../../../src/adapters/pg/pool.js";
import { type Config, resolveConfig } from "../../../src/config/config.js";
import { dueKey, shardOf } from "../../../src/domain/shard.js";
import { ensureDatabase, runMaintenance, runMigrations } from "../../../src/main/admin.js";
import type { Clock } from "../../../src/ports/clock.js";

/** Admin connection for creating test databases (trust auth on this machine and in CI). */
export const ADMIN_DATABASE_URL =
  process.env.CF_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
export const TEST_REDIS_URL = process.env.CF_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

const HOW_TO_START = "start it with `scripts/services.sh ensure`";

export async function requirePostgres(): Promise<void> {
  const client = new pg.Client({
    connectionString: ADMIN_DATABASE_URL,
    connectionTimeoutMillis: 3000,
  });
  try {
    await client.connect();
    await client.query("SELECT 1");
  } catch (error) {
    throw new Error(
      `Postgres is not reachable at ${ADMIN_DATABASE_URL} (${(error as Error).message}); ${HOW_TO_START}`,
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function requireRedis(): Promise<void> {
  const redis = new Redis(TEST_REDIS_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 3000,
  });
  redis.on("error", () => undefined);
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw new Error(
      `Redis is not reachable at ${TEST_REDIS_URL} (${(error as Error).message}); ${HOW_TO_START}`,
    );
  } finally {
    redis.disconnect();
  }
}

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  await requirePostgres();
  const name = `cf_test_${randomBytes(6).toString("hex")}`;
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${name}`;
  await ensureDatabase(url.toString());
  return {
    url: url.toString(),
    name,
    async drop() {
      const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}

/** A config for tests: small horizon (few partitions), silent logs, a random port and prefix. */
export function testConfig(databaseUrl: string, overrides: Partial<Config> = {}): Config {
  return resolveConfig(
    {},
    {
      databaseUrl,
      redisUrl: TEST_REDIS_URL,
      redisKeyPrefix: `cf-test-${randomBytes(4).toString("hex")}`,
      host: "127.0.0.1",
      port: 0,
      horizonDays: 7,
      retentionDays: 2,
      logLevel: "silent",
      ...overrides,
    },
  );
}

/** Creates, migrates and partitions a fresh database. */
export async function migratedDatabase(clock: Clock = systemClock): Promise<TestDatabase> {
  const db = await createTestDatabase();
  const config = testConfig(db.url);
  await runMigrations(config);
  await runMaintenance(config, clock);
  return db;
}

export async function deleteRedisKeys(prefix: string): Promise<void> {
  const redis = new Redis(TEST_REDIS_URL);
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}

/**
 * Resolves once the API's add of a task to its shard's due set has landed: the
 * API adds after it answers, so a test that then changes the entry could be overtaken.
 */
export async function untilDue(
  redis: Redis,
  keyPrefix: string,
  task: { tenantId: string; id: string },
): Promise<void> {
  const key = dueKey(keyPrefix, shardOf(task.tenantId, task.id));
  const deadline = Date.now() + 10_000;
  while ((await redis.zscore(key, task.id)) === null) {
    if (Date.now() > deadline) throw new Error(`task ${task.id} never reached ${key}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A small pool of the production adapter as the owner (no database role), for a test's stores. */
export const testPool = (url: string, applicationName: string): PgPool =>
  createPgPool({
    connectionString: url,
    maxConnections: 2,
    statementTimeoutMs: 5000,
    connectTimeoutMs: 2000,
    role: null,
    applicationName,
    onError: () => undefined,
  });

export async function withPg<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
