import pg from "pg";
import { BEGIN, beginForTenant, COMMIT, ROLLBACK } from "./sql/transactions.js";

export interface PgPoolOptions {
  connectionString: string;
  maxConnections: number;
  /** Server-side limit per statement; the client-side limit is a little longer. */
  statementTimeoutMs: number;
  connectTimeoutMs: number;
  /** A role to SET on every connection (e.g. chronofence_api), or null to stay as the login role. */
  role: string | null;
  applicationName: string;
  onError: (error: Error) => void;
}

const IDLE_TIMEOUT_MS = 10 * 60_000;
/**
 * A connection is closed (when idle) after a day: the worker prepares its
 * batched statements once per day's partition (execution-batches.ts), and a
 * backend keeps every statement it prepared until its connection ends.
 */
const MAX_LIFETIME_S = 24 * 60 * 60;

/** Opaque to everything outside adapters/pg. */
export type PgPool = pg.Pool;

export function createPgPool(options: PgPoolOptions): PgPool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections,
    connectionTimeoutMillis: options.connectTimeoutMs,
    statement_timeout: options.statementTimeoutMs,
    query_timeout: options.statementTimeoutMs + 1000,
    idle_in_transaction_session_timeout: options.statementTimeoutMs * 2,
    application_name: options.applicationName,
    keepAlive: true,
    // pg's default closes a connection idle for 10 s. A new backend plans from cold caches:
    // a count over all ~400 task partitions planned in 383 ms on a new backend, 45 ms on a
    // warm one (bench database, 2026-12-02).
    idleTimeoutMillis: IDLE_TIMEOUT_MS,
    maxLifetimeSeconds: MAX_LIFETIME_S,
    // Startup parameters hold before the first query. A 201 means committed
    // and flushed, whatever the server's default; the server checks that the
    // login role may assume `role`. No JIT: every statement here is short, but
    // one that reads every shard in dozens of partitions can be costed past
    // jit_above_cost; the lease reaper (16 shards × 31 partitions) compiled 223
    // functions for 0.4–0.7 s of CPU to find nothing in 45 ms (bench/RESULTS.md,
    // session 24).
    options: `-c synchronous_commit=on -c jit=off${options.role === null ? "" : ` -c role=${options.role}`}`,
  });
  // A client losing its connection must not crash the process, idle or checked out: the pool
  // listens only to idle ones, and a session the server ends (a restart, pg_terminate_backend)
  // between two queries of a checked-out client emits 'error' with no listener otherwise
  // (found by the chaos run: integration/pg-pool-terminate.test.ts). Each error is reported once,
  // by the client's own listener; the query in flight, or the next one, fails as well.
  pool.on("connect", (client) => client.on("error", options.onError));
  pool.on("error", () => undefined);
  return pool;
}

/** Runs `fn` in a transaction scoped to one tenant (for row-level security). */
export function withTenant<T>(
  pool: PgPool,
  tenantId: string,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  return withTransaction(pool, fn, beginForTenant(tenantId));
}

/** Runs `fn` in a transaction on one client: committed if it resolves, rolled back if it throws. */
export async function withTransaction<T>(
  pool: PgPool,
  fn: (client: pg.PoolClient) => Promise<T>,
  begin = BEGIN,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query(begin);
    const result = await fn(client);
    await client.query(COMMIT);
    client.release();
    return result;
  } catch (error) {
    await client.query(ROLLBACK).catch(() => undefined);
    // A client in an unknown state is destroyed, not reused.
    client.release(error instanceof Error ? error : true);
    throw error;
  }
}
