/**
 * Starts the real API role in-process against a test database, and a tiny client for it.
 *
 * Two backends (`CF_TEST_BACKEND`, set per vitest project in vitest.config.ts):
 * `services` — the shared Postgres and Redis, each test file with its own
 * database and key prefix — and `embedded` — the embedded default of
 * `chronofence dev` (PGlite, in-process hot tier; support/embedded.ts). A
 * suite that reaches past the API does it through the fixture (`withDb`,
 * `dueRunAtMs`, `takeDue`, `newTenant`), so the same file runs on both.
 */
import { Redis } from "ioredis";
import { pino } from "pino";
import { systemClock } from "../../../src/adapters/clock/system-clock.js";
import { PgTenantDirectory } from "../../../src/adapters/pg/tenant-directory.js";
import { RedisDispatchHotTier } from "../../../src/adapters/redis/dispatch-hot-tier.js";
import type { Config } from "../../../src/config/config.js";
import { shardOf } from "../../../src/domain/shard.js";
import type { TenantLimits } from "../../../src/domain/tenant.js";
import { createTenant } from "../../../src/main/admin.js";
import { type RunningApi, startApi } from "../../../src/main/api.js";
import { uuidv7From } from "../../../src/main/ids.js";
import type { RoleInfrastructure } from "../../../src/main/role-connections.js";
import type { Clock } from "../../../src/ports/clock.js";
import type { DispatchHotTier } from "../../../src/ports/dispatch-hot-tier.js";
import { type EmbeddedBackend, openEmbeddedBackend } from "./embedded.js";
import {
  deleteRedisKeys,
  migratedDatabase,
  requireRedis,
  TEST_REDIS_URL,
  type TestDatabase,
  testConfig,
  withPg,
} from "./services.js";

export type Backend = "services" | "embedded";
export const TEST_BACKEND: Backend =
  process.env.CF_TEST_BACKEND === "embedded" ? "embedded" : "services";

export interface TestApi {
  api: RunningApi;
  baseUrl: string;
  config: Config;
  stop(): Promise<void>;
}

export async function startTestApi(
  config: Config,
  clock: Clock = systemClock,
  infra?: RoleInfrastructure,
): Promise<TestApi> {
  // CF_TEST_LOG_LEVEL=error shows what the server logs while a test runs.
  const logger = pino({ level: process.env.CF_TEST_LOG_LEVEL ?? "silent" });
  const api = await startApi(config, clock, logger, {}, infra);
  return {
    api,
    config,
    baseUrl: `http://127.0.0.1:${api.port}`,
    async stop() {
      await api.stop();
      if (!infra) await deleteRedisKeys(config.redisKeyPrefix);
    },
  };
}

export interface TestTenant {
  id: string;
  apiKeyId: string;
  apiKey: string;
}

export async function newTenant(
  config: Config,
  limits: Partial<TenantLimits> = {},
): Promise<TestTenant> {
  const created = await createTenant(config, systemClock, randomTenantName(), generous(limits));
  return { id: created.tenant.id, apiKeyId: created.apiKeyId, apiKey: created.apiKey };
}

export interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: a JSON answer; the assertions check its shape
  body: any;
}

export async function call(
  baseUrl: string,
  method: string,
  path: string,
  options: {
    key?: string;
    body?: unknown;
    rawBody?: string | Uint8Array;
    headers?: Record<string, string>;
  } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | Uint8Array | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers["content-type"] = "application/json";
  const init: RequestInit = { method, headers };
  if (body !== undefined) init.body = body as BodyInit;
  const response = await fetch(`${baseUrl}${path}`, init);
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // metrics are text
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

/** POST /v1/tasks, which must answer 201; the new task's id. */
export async function submitTask(
  baseUrl: string,
  apiKey: string,
  body: Record<string, unknown>,
): Promise<string> {
  const answer = await call(baseUrl, "POST", "/v1/tasks", { key: apiKey, body });
  if (answer.status !== 201)
    throw new Error(`POST /v1/tasks answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer.body.id;
}

/** A test file's own migrated database with one tenant in it (and the shared Redis checked). */
export interface TenantFixture {
  db: TestDatabase;
  tenant: TestTenant;
}

export async function startTenantFixture(
  limits: Partial<TenantLimits> = {},
): Promise<TenantFixture> {
  await requireRedis();
  const db = await migratedDatabase();
  try {
    return { db, tenant: await newTenant(testConfig(db.url), limits) };
  } catch (error) {
    await db.drop();
    throw error;
  }
}

/** A pool or a connection, as the fixture hands it to `withDb`. */
export interface Queryable {
  // biome-ignore lint/suspicious/noExplicitAny: rows of whatever SQL a test runs
  query(text: string, values?: unknown[]): Promise<{ rows: any[]; rowCount: number | null }>;
}

/**
 * A test file's own migrated database, the API on it (its own Redis key
 * prefix, plus whatever `overrides` set, e.g. its own topic prefix), and one
 * tenant, on TEST_BACKEND. On `services` the shared Redis is checked first
 * unless `overrides` name another.
 */
export interface ApiFixture {
  backend: Backend;
  /** services: the test database; embedded: its data directory (no server answers `url`). */
  db: TestDatabase;
  config: Config;
  api: TestApi;
  tenant: TestTenant;
  /** SQL as the owner (no row-level security), on one connection: a BEGIN holds across calls. */
  withDb<T>(fn: (db: Queryable) => Promise<T>): Promise<T>;
  newTenant(limits?: Partial<TenantLimits>): Promise<TestTenant>;
  /** The run_at of a task in its shard's due set, or null (the hot tier is left as it was). */
  dueRunAtMs(task: { tenantId: string; id: string }): Promise<number | null>;
  /** Resolves once the task is in its shard's due set (the API adds it after it answers). */
  untilDue(task: { tenantId: string; id: string }): Promise<void>;
  /** Takes a task out of its shard's due set, as a dispatcher's claim and ack would. */
  takeDue(task: { tenantId: string; id: string }): Promise<void>;
  /** Stops the API (deleting its Redis keys) and drops the database. */
  stop(): Promise<void>;
}

export async function startApiFixture(
  overrides: Partial<Config> = {},
  limits: Partial<TenantLimits> = {},
): Promise<ApiFixture> {
  return TEST_BACKEND === "embedded"
    ? embeddedFixture(overrides, limits)
    : servicesFixture(overrides, limits);
}

async function servicesFixture(
  overrides: Partial<Config>,
  limits: Partial<TenantLimits>,
): Promise<ApiFixture> {
  if (overrides.redisUrl === undefined) await requireRedis();
  const db = await migratedDatabase();
  let api: TestApi | undefined;
  let redis: Redis | undefined;
  const stop = async () => {
    redis?.disconnect();
    await api?.stop();
    await db.drop();
  };
  try {
    const config = testConfig(db.url, overrides);
    api = await startTestApi(config);
    redis = new Redis(overrides.redisUrl ?? TEST_REDIS_URL);
    redis.on("error", () => undefined);
    const tenant = await newTenant(config, limits);
    return {
      backend: "services",
      db,
      config,
      api,
      tenant,
      withDb: (fn) => withPg(db.url, fn),
      newTenant: (more = {}) => newTenant(config, more),
      ...dueInspection(new RedisDispatchHotTier(redis, config.redisKeyPrefix)),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function embeddedFixture(
  overrides: Partial<Config>,
  limits: Partial<TenantLimits>,
): Promise<ApiFixture> {
  const backend: EmbeddedBackend = await openEmbeddedBackend();
  let api: TestApi | undefined;
  const stop = async () => {
    await api?.stop();
    await backend.close();
  };
  try {
    const owner = backend.postgres.pool(null);
    const config = testConfig(`postgres://embedded.invalid/${backend.dir}`, overrides);
    api = await startTestApi(config, systemClock, backend.infra);
    const tenants = new PgTenantDirectory(owner, uuidv7From(systemClock));
    const create = async (more: Partial<TenantLimits>): Promise<TestTenant> => {
      const created = await tenants.create(randomTenantName(), generous(more), Date.now());
      return { id: created.tenant.id, apiKeyId: created.apiKeyId, apiKey: created.apiKey };
    };
    return {
      backend: "embedded",
      db: { url: `embedded:${backend.dir}`, name: backend.dir, drop: async () => undefined },
      config,
      api,
      tenant: await create(limits),
      async withDb(fn) {
        const client = await owner.connect();
        try {
          return await fn(client);
        } finally {
          client.release();
        }
      },
      newTenant: (more = {}) => create(more),
      ...dueInspection(backend.hotTier),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The due set seen through the dispatcher's port: claimed and given back, or claimed and acked. */
function dueInspection(
  hot: DispatchHotTier,
): Pick<ApiFixture, "dueRunAtMs" | "untilDue" | "takeDue"> {
  const takeAll = async (shard: number) => {
    const [batch] = await hot.claim([{ shard, limit: 2000 }], 0, Number.MAX_SAFE_INTEGER, 1);
    return batch!.claims;
  };
  const dueRunAtMs = async (task: { tenantId: string; id: string }) => {
    const shard = shardOf(task.tenantId, task.id);
    const claims = await takeAll(shard);
    await hot.giveBack(shard, claims);
    return claims.find((c) => c.taskId === task.id)?.runAtMs ?? null;
  };
  return {
    dueRunAtMs,
    async untilDue(task) {
      const deadline = Date.now() + 10_000;
      while ((await dueRunAtMs(task)) === null) {
        if (Date.now() > deadline) throw new Error(`task ${task.id} never reached its due set`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async takeDue(task) {
      const shard = shardOf(task.tenantId, task.id);
      const claims = await takeAll(shard);
      await hot.giveBack(
        shard,
        claims.filter((c) => c.taskId !== task.id),
      );
      await hot.ack(new Map([[shard, claims.filter((c) => c.taskId === task.id)]]));
    },
  };
}

const randomTenantName = () => `tenant-${Math.random().toString(36).slice(2)}`;

const generous = (limits: Partial<TenantLimits>): Partial<TenantLimits> => ({
  ratePerS: 100_000,
  burst: 100_000,
  ...limits,
});
