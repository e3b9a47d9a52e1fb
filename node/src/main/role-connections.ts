/**
 * The connections of the background roles (dispatch roles, planner, worker):
 * a Postgres pool as the login role — these roles work across tenants, which
 * row-level security would hide from them — and Redis, with every connection
 * error reported to the role's log rather than thrown.
 */
import { createPgPool, type PgPool } from "../adapters/pg/pool.js";
import { createRedis } from "../adapters/redis/hot-tier.js";
import type { Config } from "../config/config.js";

export type RoleErrorHandler = (error: unknown, what: string) => void;

export function rolePgPool(
  config: Config,
  pool: { maxConnections: number; applicationName: string },
  onError: RoleErrorHandler,
): PgPool {
  return createPgPool({
    connectionString: config.databaseUrl,
    maxConnections: pool.maxConnections,
    statementTimeoutMs: config.pgStatementTimeoutMs,
    connectTimeoutMs: config.pgConnectTimeoutMs,
    role: null,
    applicationName: pool.applicationName,
    onError: (error) => onError(error, "postgres connection"),
  });
}

export function roleRedis(config: Config, onError: RoleErrorHandler) {
  return createRedis({
    url: config.redisUrl,
    keyPrefix: config.redisKeyPrefix,
    commandTimeoutMs: config.redisCommandTimeoutMs,
    connectTimeoutMs: config.pgConnectTimeoutMs,
    onError: (error) => onError(error, "redis"),
  });
}
