/**
 * The embedded Postgres of `chronofence dev`: PGlite on a data directory,
 * offered as the `PgPool`s the stores of adapters/pg take, so that they run
 * the same SQL as against a server.
 *
 * One session (PGlite is single-user), so one real `pg.Pool` of one
 * connection (socket.ts) under every pool handed out: a transaction holds
 * the connection until its COMMIT, and every other statement of the process
 * waits for it, which is how transactions are serialised. A statement that
 * waits longer than SESSION_WAIT_MS fails rather than hang — it would be a
 * statement issued inside a transaction on another pool (a deadlock on one
 * connection), or a stall.
 *
 * Roles: the pools are views with a role each. The login-role view passes
 * statements through. The API's view (`chronofence_api`, row-level
 * security) runs each of its transactions under `SET LOCAL ROLE`, and each
 * lone statement inside a transaction of its own with the same, so
 * row-level security applies exactly as with a server, where the role is a
 * startup option; the role ends with the transaction, the session returns
 * to the owner for the next user. A statement on a client of that view
 * outside a transaction is refused, never run as the owner.
 *
 * Not emulated: statement_timeout (PGlite does not enforce it; a statement
 * runs to its end) and durability against power loss (PGlite never fsyncs;
 * a process crash loses nothing written, docs/operations.md).
 */
import pg from "pg";
import { type MigrateResult, migrateWith } from "../pg/migrate.js";
import type { PgPool } from "../pg/pool.js";
import { openPgliteEngine, type PgliteEngine } from "./engine.js";
import { PgliteSocket } from "./socket.js";

const SESSION_WAIT_MS = 30_000;
const ROLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const BEGINS = /^\s*(BEGIN|START\s+TRANSACTION)\b/i;
const ENDS = /^\s*(COMMIT|ROLLBACK|END|ABORT)\b/i;

export interface EmbeddedPostgres {
  /** A pool as the owner (role null: the background roles) or under a role (the API). */
  pool(role: string | null): PgPool;
  migrate(directory: string): Promise<MigrateResult>;
  close(): Promise<void>;
}

/**
 * `onError`: a connection's error (its statement fails; the next one gets a
 * new connection). `onFatal`: the engine died (engine.ts); every statement
 * fails from then on.
 */
export async function openEmbeddedPostgres(
  dataDir: string,
  onError: (error: Error) => void,
  onFatal: (error: Error) => void = onError,
): Promise<EmbeddedPostgres> {
  const engine = await openPgliteEngine(dataDir, onFatal);
  const session = sessionPool(engine, onError);
  return {
    pool: (role) => (role === null ? ownerView(session) : roleView(session, role)),
    async migrate(directory) {
      const client = await session.connect();
      try {
        return await migrateWith(client, directory);
      } finally {
        client.release();
      }
    },
    async close() {
      await session.end();
      await engine.close();
    },
  };
}

function sessionPool(engine: PgliteEngine, onError: (error: Error) => void): pg.Pool {
  const pool = new pg.Pool({
    max: 1,
    // The connection is free to make (no network) and its session outlives it anyway.
    idleTimeoutMillis: 0,
    connectionTimeoutMillis: SESSION_WAIT_MS,
    // pg's types read from the stream type, not from here; user and database only label it.
    user: "postgres",
    database: "postgres",
    stream: () => new PgliteSocket(engine),
  });
  pool.on("error", onError);
  return pool;
}

/** Only what the pg adapters use of a pg.Pool (PgPool); `end` leaves the shared session open. */
type View = Pick<pg.Pool, "query" | "connect"> & { end(): Promise<void> };

function ownerView(session: pg.Pool): PgPool {
  const view: View = {
    query: session.query.bind(session),
    connect: session.connect.bind(session),
    end: async () => undefined,
  };
  return view as unknown as PgPool;
}

function roleView(session: pg.Pool, role: string): PgPool {
  if (!ROLE_NAME.test(role)) throw new Error(`not a role name: ${role}`);
  const setRole = `SET LOCAL ROLE ${role}`;
  async function query(text: string | pg.QueryConfig, values?: unknown[]) {
    const client = await session.connect();
    try {
      await client.query(`BEGIN; ${setRole}`);
      const result = await client.query(text, values);
      await client.query("COMMIT");
      client.release();
      return result;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      client.release();
      throw error;
    }
  }
  async function connect() {
    const client = await session.connect();
    let inTransaction = false;
    const wrapped = {
      async query(text: string | pg.QueryConfig, values?: unknown[]) {
        const sql = typeof text === "string" ? text : text.text;
        if (!inTransaction && !BEGINS.test(sql)) {
          throw new Error(`embedded Postgres: a statement outside a transaction as ${role}`);
        }
        const result = await client.query(text, values);
        if (BEGINS.test(sql)) {
          await client.query(setRole);
          inTransaction = true;
        } else if (ENDS.test(sql)) {
          inTransaction = false;
        }
        return result;
      },
      release(error?: Error | boolean) {
        // Left inside a transaction: the connection is dropped, and the next one rolls it back.
        client.release(inTransaction ? new Error("released inside a transaction") : error);
      },
    };
    return wrapped;
  }
  const view = { query, connect, end: async () => undefined };
  return view as unknown as PgPool;
}
