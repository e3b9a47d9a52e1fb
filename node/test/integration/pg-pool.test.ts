/** The API's Postgres sessions: subject to RLS as chronofence_api, durable commits forced on. */
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createPgPool } from "../../src/adapters/pg/pool.js";
import { migratedDatabase, type TestDatabase, withPg } from "./support/services.js";

let db: TestDatabase;

beforeAll(async () => {
  db = await migratedDatabase();
  // Even where the database's default is asynchronous commit, the API's is not.
  await withPg(db.url, (c) =>
    c.query(`ALTER DATABASE ${pg.escapeIdentifier(db.name)} SET synchronous_commit = off`),
  );
});

afterAll(async () => {
  await db?.drop();
});

it("runs as chronofence_api (no superuser, no RLS bypass) with synchronous_commit on", async () => {
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
        `SELECT current_user AS who, current_setting('synchronous_commit') AS sync, r.rolbypassrls, r.rolsuper
           FROM pg_roles r WHERE r.rolname = current_user`,
      )
    ).rows[0];
    expect(row).toEqual({
      who: "chronofence_api",
      sync: "on",
      rolbypassrls: false,
      rolsuper: false,
    });
  } finally {
    await pool.end();
  }
});
