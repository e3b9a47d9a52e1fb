/** Composition of the operator commands: migrate, maintain, tenants, keys. */
import type pg from "pg";
import { defaultMigrationsDirectory, type MigrateResult, migrate } from "../adapters/pg/migrate.js";
import { type MaintenanceReport, maintainTaskPartitions } from "../adapters/pg/partitions.js";
import { createPgPool } from "../adapters/pg/pool.js";
import { PgTenantDirectory } from "../adapters/pg/tenant-directory.js";
import { type Config, horizonMsOf } from "../config/config.js";
import type { Scope } from "../domain/api-keys.js";
import type { TenantLimits } from "../domain/tenant.js";
import type { Clock } from "../ports/clock.js";
import type { CreatedKey, CreatedTenant, TenantRecord } from "../ports/tenant-directory.js";
import { uuidv7From } from "./ids.js";

export { ensureDatabase } from "../adapters/pg/database.js";

export async function runMigrations(config: Config, directory?: string): Promise<MigrateResult> {
  return migrate(config.databaseUrl, directory ?? (await defaultMigrationsDirectory()));
}

async function withAdminPool<T>(config: Config, fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = createPgPool({
    connectionString: config.databaseUrl,
    maxConnections: 2,
    statementTimeoutMs: config.maintenanceStatementTimeoutMs,
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

export function updateTenant(
  config: Config,
  clock: Clock,
  name: string,
  changes: Partial<TenantLimits>,
): Promise<TenantRecord | null> {
  return withAdminPool(config, (pool) =>
    new PgTenantDirectory(pool, uuidv7From(clock)).update(name, changes, clock.nowMs()),
  );
}

export function listTenants(config: Config, clock: Clock): Promise<TenantRecord[]> {
  return withAdminPool(config, (pool) => new PgTenantDirectory(pool, uuidv7From(clock)).list());
}

export function createKey(
  config: Config,
  clock: Clock,
  tenantName: string,
  scopes: readonly Scope[],
): Promise<CreatedKey | null> {
  return withAdminPool(config, (pool) =>
    new PgTenantDirectory(pool, uuidv7From(clock)).createKey(tenantName, scopes, clock.nowMs()),
  );
}

export function revokeKey(config: Config, clock: Clock, apiKeyId: string): Promise<boolean> {
  return withAdminPool(config, (pool) =>
    new PgTenantDirectory(pool, uuidv7From(clock)).revokeKey(apiKeyId, clock.nowMs()),
  );
}
