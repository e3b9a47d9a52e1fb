/**
 * How the execution store talks to Postgres for one call: the ref checks
 * (a malformed id or token can match nothing), the "0 rows → stale or
 * not_found" classification, transactions, tenant scope under row-level
 * security, and the retry of statements that lost a race with a partition
 * move.
 */
import type pg from "pg";
import { isUuid } from "../../domain/uuid.js";
import type { ExecutionRef } from "../../ports/execution-store.js";
import { isDateMs, isoOfMs } from "./epoch-ms.js";
import { fromPgError } from "./errors.js";
import { type PgPool, withTenant, withTransaction } from "./pool.js";
import { TASK_STATUS } from "./sql/execution.js";

/** A pool (one statement, autocommit) or a client inside a transaction. */
export type Queryable = Pick<pg.PoolClient, "query">;

const TOKEN = /^[1-9][0-9]{0,17}$/; // any bigint the sequence can hand out soon

export type Missing = { kind: "stale" } | { kind: "not_found" };

export class FencedCalls {
  constructor(
    private readonly pool: PgPool,
    private readonly rowLevelSecurity: boolean,
    private readonly maxRetries: number,
  ) {}

  /**
   * Runs a fenced call: `attempt` answers null for "0 rows", which becomes
   * `stale` or `not_found` after one more look (inside the same transaction
   * under row-level security). Malformed ids and tokens can match nothing.
   */
  async fenced<T>(
    ref: ExecutionRef,
    operation: string,
    attempt: (db: Queryable) => Promise<T | null>,
    needsTransaction = false,
  ): Promise<T | Missing> {
    if (!this.wellFormed(ref)) {
      if (!isUuid(ref.taskId) || !isUuid(ref.tenantId)) return { kind: "not_found" };
      return this.staleOrMissing(ref, operation);
    }
    const run = async (db: Queryable) => (await attempt(db)) ?? (await classify(db, ref));
    try {
      return await this.withRetries(() =>
        needsTransaction || this.rowLevelSecurity
          ? withTenant(this.pool, ref.tenantId, run)
          : run(this.pool),
      );
    } catch (error) {
      throw fromPgError(error, operation);
    }
  }

  /**
   * Whether the ref can match a row: well-formed ids and token, a run_at a
   * Date can hold. A call with any other ref goes through `fenced`, which
   * answers it without the statement.
   */
  wellFormed(ref: ExecutionRef): boolean {
    return (
      isUuid(ref.taskId) &&
      isUuid(ref.tenantId) &&
      TOKEN.test(ref.fencingToken) &&
      (ref.runAtMs === undefined || isDateMs(ref.runAtMs))
    );
  }

  /** One read scoped to a tenant: in a tenant transaction under row-level security, else on the pool. */
  scoped<T>(tenantId: string, fn: (db: Queryable) => Promise<T>): Promise<T> {
    return this.rowLevelSecurity ? withTenant(this.pool, tenantId, fn) : fn(this.pool);
  }

  /** A tenant transaction with the partition-move retry (API role and login role alike). */
  inTenant<T>(tenantId: string, fn: (db: Queryable) => Promise<T>): Promise<T> {
    return this.withRetries(() => withTenant(this.pool, tenantId, fn));
  }

  /** A transaction on the pool, run again whole if it lost a race with a partition move. */
  inTransactionWithRetries<T>(fn: (db: Queryable) => Promise<T>): Promise<T> {
    return this.withRetries(() => withTransaction(this.pool, fn));
  }

  /** A statement that waited on a row another transaction moved to another partition fails with 40001. */
  async withRetries<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (error) {
        const code = (error as { code?: unknown } | null)?.code;
        // 40P01: two coalesced statements locked the same rows in opposite orders.
        if ((code !== "40001" && code !== "40P01") || attempt >= this.maxRetries) throw error;
      }
    }
  }

  /** What a fenced call whose statement matched nothing answers: stale, or not_found. */
  async staleOrMissing(ref: ExecutionRef, operation: string): Promise<Missing> {
    try {
      return await this.scoped(ref.tenantId, (db) => classify(db, ref));
    } catch (error) {
      throw fromPgError(error, operation);
    }
  }
}

async function classify(db: Queryable, ref: ExecutionRef): Promise<Missing> {
  const found = await db.query(TASK_STATUS, [ref.tenantId, ref.taskId]);
  return found.rowCount === 0 ? { kind: "not_found" } : { kind: "stale" };
}

export const hasRunAt = (ref: ExecutionRef): ref is ExecutionRef & { runAtMs: number } =>
  ref.runAtMs !== undefined;

/** Index of a statement's two forms (sql/execution.ts): without, or with, the run_at test. */
export const withRunAt = (ref: ExecutionRef): 0 | 1 => (ref.runAtMs === undefined ? 0 : 1);

export const withRunAtParam = (ref: ExecutionRef, params: unknown[]): unknown[] =>
  ref.runAtMs === undefined ? params : [...params, isoOfMs(ref.runAtMs)];
