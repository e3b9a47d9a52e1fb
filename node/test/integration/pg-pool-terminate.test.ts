/**
 * Regression (found by the chaos run, docs/evidence.md): a Postgres restart
 * or failover ends every session with FATAL 57P01; a session checked out of
 * the pool and between two queries then emits 'error' on its client, which
 * the pool no longer listens to while it is checked out — an unhandled
 * 'error' event that killed the API and dispatch processes. Here the session
 * is ended the same way, by pg_terminate_backend, while checked out and idle.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { createPgPool } from "../../src/adapters/pg/pool.js";
import { createTestDatabase, type TestDatabase, withPg } from "./support/services.js";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});

afterAll(async () => {
  await db?.drop();
});

it("a checked-out session the server terminates crashes nothing; the pool serves on", async () => {
  const reported: Error[] = [];
  const pool = createPgPool({
    connectionString: db.url,
    maxConnections: 2,
    statementTimeoutMs: 5000,
    connectTimeoutMs: 2000,
    role: null,
    applicationName: "terminate-test",
    onError: (error) => reported.push(error),
  });
  try {
    const client = await pool.connect();
    const { pid } = (await client.query("SELECT pg_backend_pid() AS pid")).rows[0];
    const ended = new Promise((resolve) => client.once("end", resolve));
    // Checked out, no query in flight: the FATAL arrives as the client's 'error' event.
    await withPg(db.url, (c) => c.query("SELECT pg_terminate_backend($1)", [pid]));
    await ended;
    await expect(client.query("SELECT 1")).rejects.toThrow();
    client.release(true);
    expect((await pool.query("SELECT 2 AS n")).rows[0].n).toBe(2);
    expect(reported.map((e) => (e as { code?: string }).code)).toContain("57P01");
  } finally {
    await pool.end();
  }
});
