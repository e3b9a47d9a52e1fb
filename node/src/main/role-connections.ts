/**
 * The connections of the background roles (dispatch roles, planner, worker):
 * a Postgres pool that assumes the role's least-privilege database role
 * (chronofence_dispatch, _worker, _planner: migrations/000011; they see
 * every tenant's rows of the tables they use, and nothing else), and Redis,
 * with every connection error reported to the role's log rather than thrown.
 */
import { createPgPool, type PgPool } from "../adapters/pg/pool.js";
import { createRedis } from "../adapters/redis/hot-tier.js";
import type { Config } from "../config/config.js";

export type RoleErrorHandler = (error: unknown, what: string) => void;

/** Which background role a pool serves, for its database role. */
export type BackgroundRole = "dispatch" | "worker" | "planner";

const DATABASE_ROLE_OF = {
  dispatch: "dispatchDatabaseRole",
  worker: "workerDatabaseRole",
  planner: "plannerDatabaseRole",
} as const satisfies Record<BackgroundRole, keyof Config>;

export function rolePgPool(
  config: Config,
  pool: { maxConnections: number; applicationName: string; role: BackgroundRole },
  onError: RoleErrorHandler,
): PgPool {
  const role = config[DATABASE_ROLE_OF[pool.role]];
  return pgPool(config, pool, role === "" ? null : role, onError);
}

/** A pool as the login role itself, for the API's work across tenants (its node report). */
export function loginPgPool(
  config: Config,
  pool: { maxConnections: number; applicationName: string },
  onError: RoleErrorHandler,
): PgPool {
  return pgPool(config, pool, null, onError);
}

function pgPool(
  config: Config,
  pool: { maxConnections: number; applicationName: string },
  role: string | null,
  onError: RoleErrorHandler,
): PgPool {
  return createPgPool({
    connectionString: config.databaseUrl,
    maxConnections: pool.maxConnections,
    statementTimeoutMs: config.pgStatementTimeoutMs,
    connectTimeoutMs: config.pgConnectTimeoutMs,
    role,
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
