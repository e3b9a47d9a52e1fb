/** Composition of the operator commands: migrate, maintain, tenants, keys. */
import pg from "pg";
import { defaultMigrationsDirectory, type MigrateResult, migrate } from "../adapters/pg/migrate.js";
import { type MaintenanceReport, maintainTaskPartitions } from "../adapters/pg/partitions.js";
import { createPgPool } from "../adapters/pg/pool.js";
import { PgTenantDirectory } from "../adapters/pg/tenant-directory.js";
import { type Config, horizonMsOf } from "../config/config.js";
import type { TenantLimits } from "../domain/tenant.js";
import type { Clock } from "../ports/clock.js";
import type { CreatedTenant, TenantRecord } from "../ports/tenant-directory.js";
import { uuidv7From } from "./ids.js";

/** Creates the database named in the URL if it does not exist (local convenience). */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  if (name === "") return false;
  url.pathname = "/postgres";
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const exists = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (exists.rowCount !== 0) return false;
    await client
      .query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`)
      .catch((error: { code?: string }) => {
        if (error.code !== "42P04") throw error; // created concurrently: fine
      });
    return true;
  } finally {
    await client.end();
  }
}

export async function runMigrations(config: Config, directory?: string): Promise<MigrateResult> {
  return migrate(config.databaseUrl, directory ?? (await defaultMigrationsDirectory()));
}

async function withAdminPool<T>(config: Config, fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = createPgPool({
    connectionString: config.databaseUrl,
    maxConnections: 2,
    statementTimeoutMs: 120_000,
    connectTimeoutMs: config.pgConnectTimeoutMs,
    role: null,
    applicationName: "chronofence-admin",
    onError: () => undefined,
  });
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

export function runMaintenance(config: Config, clock: Clock): Promise<MaintenanceReport> {
  const plan = { horizonMs: horizonMsOf(config), retentionDays: config.retentionDays };
  return withAdminPool(config, (pool) => maintainTaskPartitions(pool, plan, clock.nowMs()));
}

export function createTenant(
  config: Config,
  clock: Clock,
  name: string,
  limits: Partial<TenantLimits>,
): Promise<CreatedTenant> {
  return withAdminPool(config, (pool) =>
    new PgTenantDirectory(pool, uuidv7From(clock)).create(name, limits, clock.nowMs()),
  );
}

export function listTenants(config: Config, clock: Clock): Promise<TenantRecord[]> {
  return withAdminPool(config, (pool) => new PgTenantDirectory(pool, uuidv7From(clock)).list());
}

export function revokeKey(config: Config, clock: Clock, apiKeyId: string): Promise<boolean> {
  return withAdminPool(config, (pool) =>
    new PgTenantDirectory(pool, uuidv7From(clock)).revokeKey(apiKeyId, clock.nowMs()),
  );
}
