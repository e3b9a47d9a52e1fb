/** Starts the real API role in-process against a test database, and a tiny client for it. */
import { pino } from "pino";
import { systemClock } from "../../../src/adapters/clock/system-clock.js";
import type { Config } from "../../../src/config/config.js";
import type { TenantLimits } from "../../../src/domain/tenant.js";
import { createTenant } from "../../../src/main/admin.js";
import { type RunningApi, startApi } from "../../../src/main/api.js";
import type { Clock } from "../../../src/ports/clock.js";
import {
  deleteRedisKeys,
  migratedDatabase,
  requireRedis,
  type TestDatabase,
  testConfig,
} from "./services.js";

export interface TestApi {
  api: RunningApi;
  baseUrl: string;
  config: Config;
  stop(): Promise<void>;
}

export async function startTestApi(config: Config, clock: Clock = systemClock): Promise<TestApi> {
  // CF_TEST_LOG_LEVEL=error shows what the server logs while a test runs.
  const logger = pino({ level: process.env.CF_TEST_LOG_LEVEL ?? "silent" });
  const api = await startApi(config, clock, logger);
  return {
    api,
    config,
    baseUrl: `http://127.0.0.1:${api.port}`,
    async stop() {
      await api.stop();
      await deleteRedisKeys(config.redisKeyPrefix);
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
  const name = `tenant-${Math.random().toString(36).slice(2)}`;
  const created = await createTenant(config, systemClock, name, {
    ratePerS: 100_000,
    burst: 100_000,
    ...limits,
  });
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

/**
 * A test file's own migrated database, the API on it (its own Redis key
 * prefix, plus whatever `overrides` set, e.g. its own topic prefix), and one
 * tenant. The shared Redis is checked first unless `overrides` name another.
 */
export interface ApiFixture {
  db: TestDatabase;
  config: Config;
  api: TestApi;
  tenant: TestTenant;
  /** Stops the API (deleting its Redis keys) and drops the database. */
  stop(): Promise<void>;
}

export async function startApiFixture(
  overrides: Partial<Config> = {},
  limits: Partial<TenantLimits> = {},
): Promise<ApiFixture> {
  if (overrides.redisUrl === undefined) await requireRedis();
  const db = await migratedDatabase();
  let api: TestApi | undefined;
  const stop = async () => {
    await api?.stop();
    await db.drop();
  };
  try {
    const config = testConfig(db.url, overrides);
    api = await startTestApi(config);
    const tenant = await newTenant(config, limits);
    return { db, config, api, tenant, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
