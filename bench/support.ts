/**
 * What the benchmarks share: the repository root, a fresh bench database
 * with a tenant that is never throttled, waiting for the API child to be
 * ready, and removing the run's Redis keys.
 */
import type { ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import pg from "pg";
import { systemClock } from "../node/src/adapters/clock/system-clock.js";
import { resolveConfig } from "../node/src/config/config.js";
import {
  createTenant,
  ensureDatabase,
  runMaintenance,
  runMigrations,
} from "../node/src/main/admin.js";

/** The repository root (the benchmarks run from dist/bench/). */
export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * Creates (if need be), migrates and partitions the bench database, empties
 * `tables` and checkpoints, then adds a tenant with limits high enough not to throttle.
 */
export async function prepareBenchDatabase(
  databaseUrl: string,
  tables: readonly string[],
): Promise<{ apiKey: string; tenantId: string }> {
  const config = resolveConfig({ ...process.env, DATABASE_URL: databaseUrl });
  await ensureDatabase(databaseUrl);
  await runMigrations(config);
  await runMaintenance(config, systemClock);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`TRUNCATE ${tables.join(", ")}`);
    await client.query("CHECKPOINT");
  } finally {
    await client.end();
  }
  const tenant = await createTenant(config, systemClock, `bench-${Date.now()}`, {
    ratePerS: 1e9,
    burst: 1e9,
  });
  return { apiKey: tenant.apiKey, tenantId: tenant.tenant.id };
}

/** Polls the API child's /readyz every 100 ms; kills it if it is not ready after `attempts`. */
export async function waitForApi(
  api: ChildProcess,
  baseUrl: string,
  attempts: number,
): Promise<ChildProcess> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const ok = await fetch(`${baseUrl}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return api;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  api.kill("SIGKILL");
  throw new Error("the API did not become ready");
}

/** The benchmark's hot-tier keys would otherwise pile up in Redis run after run. */
export async function deleteBenchKeys(prefix: string): Promise<void> {
  const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 100);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}
