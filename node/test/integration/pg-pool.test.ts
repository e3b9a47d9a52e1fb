/** The API's Postgres sessions: subject to RLS as chronofence_api, durable commits forced on, no JIT. */
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createPgPool } from "../../src/adapters/pg/pool.js";
import { migratedDatabase, type TestDatabase, withPg } from "./support/services.js";

let db: TestDatabase;

beforeAll(async () => {
  db = await migratedDatabase();
  // Even where the database's defaults are asynchronous commit and JIT, the API's are not.
  await withPg(db.url, async (c) => {
    await c.query(`ALTER DATABASE ${pg.escapeIdentifier(db.name)} SET synchronous_commit = off`);
    await c.query(`ALTER DATABASE ${pg.escapeIdentifier(db.name)} SET jit = on`);
  });
});

afterAll(async () => {
  await db?.drop();
});

it("runs as chronofence_api (no superuser, no RLS bypass) with synchronous_commit on and jit off", async () => {
  const pool = createPgPool({
    connectionString: db.url,
    maxConnections: 1,
    statementTimeoutMs: 5000,
    connectTimeoutMs: 2000,
    role: "chronofence_api",
    applicationName: "test",
    onError: () => undefined,
  });
  try {
    const row = (
      await pool.query(
        `SELECT current_user AS who, current_setting('synchronous_commit') AS sync,
                current_setting('jit') AS jit, r.rolbypassrls, r.rolsuper
           FROM pg_roles r WHERE r.rolname = current_user`,
      )
    ).rows[0];
    expect(row).toEqual({
      who: "chronofence_api",
      sync: "on",
      jit: "off",
      rolbypassrls: false,
      rolsuper: false,
    });
  } finally {
    await pool.end();
  }
});
