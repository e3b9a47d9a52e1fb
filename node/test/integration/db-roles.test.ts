/**
 * The background roles' database roles (migrations/000011): each can do what
 * its role needs across tenants and is refused (SQLSTATE 42501) what it must
 * not do. Connections assume the role as the roles do (`-c role=...`, the
 * pool's `role` option); one test logs in as a NOINHERIT member, as
 * production should, to show that leaving the role leaves nothing.
 * That the roles' real statements work under these grants is what the
 * pipeline suites (dispatch, worker, planner, workflows) show: they run
 * every role on its database role.
 */
import { randomBytes, randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPgPool, type PgPool } from "../../src/adapters/pg/pool.js";
import {
  ADMIN_DATABASE_URL,
  migratedDatabase,
  type TestDatabase,
  withPg,
} from "./support/services.js";

let db: TestDatabase;
const pools = new Map<string, PgPool>();
const tenants = [randomUUID(), randomUUID()];
const loginRole = `cf_test_login_${randomBytes(4).toString("hex")}`;

beforeAll(async () => {
  db = await migratedDatabase();
  await withPg(db.url, async (c) => {
    for (const tenant of tenants) {
      await c.query(
        "INSERT INTO tenants (id, name, rate_per_s, burst, max_payload_bytes, grace_ms, created_at) VALUES ($1, $2, 1, 1, 1000, 0, now())",
        [tenant, `t-${tenant}`],
      );
      await c.query(
        `INSERT INTO tasks (id, tenant_id, type, payload, priority, status, run_at, max_attempts,
                            timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
                            created_at, updated_at)
         VALUES ($1, $2, 't', '{}', 'standard', 'SCHEDULED', now(), 3, 1000, 'fixed', 1, 1, now(), now())`,
        [randomUUID(), tenant],
      );
    }
    await c.query(
      "INSERT INTO leases (name, owner, epoch, expires_at) VALUES ('shard:1', 'n', 7, now() - interval '1 day'), ('node:dispatch:gone', 'n', 1, now() - interval '1 day')",
    );
  });
});

afterAll(async () => {
  await Promise.all([...pools.values()].map((p) => p.end()));
  await db?.drop();
  await withPg(ADMIN_DATABASE_URL, (c) => c.query(`DROP ROLE IF EXISTS ${loginRole}`));
});

function as(role: string): PgPool {
  let pool = pools.get(role);
  if (!pool) {
    pool = createPgPool({
      connectionString: db.url,
      maxConnections: 1,
      statementTimeoutMs: 5000,
      connectTimeoutMs: 2000,
      role,
      applicationName: `db-roles-${role}`,
      onError: () => undefined,
    });
    pools.set(role, pool);
  }
  return pool;
}

const refused = (role: string, sql: string) =>
  expect(as(role).query(sql), `${role}: ${sql}`).rejects.toMatchObject({ code: "42501" });

/** Statements no background role may run. */
const NOBODY = [
  "SELECT * FROM api_keys",
  "SELECT cf_authenticate('\\x00'::bytea)",
  "DELETE FROM tasks",
  "DELETE FROM leases",
  "TRUNCATE tasks",
  "DROP TABLE tasks",
  "CREATE TABLE evil (x int)",
  "UPDATE tasks SET payload = '{}'",
  "UPDATE tasks SET tenant_id = tenant_id",
  "INSERT INTO audit_log (tenant_id, action, at) VALUES (gen_random_uuid(), 'x', now())",
  "UPDATE tenants SET rate_per_s = 1e9",
];

describe("database roles", () => {
  it.each(["chronofence_dispatch", "chronofence_worker", "chronofence_planner"])(
    "%s sees every tenant's tasks and nothing it must not touch",
    async (role) => {
      const seen = await as(role).query("SELECT DISTINCT tenant_id FROM tasks");
      expect(seen.rows.map((r) => r.tenant_id).sort()).toEqual([...tenants].sort());
      for (const sql of NOBODY) await refused(role, sql);
    },
  );

  it("the worker cannot read tenants, arm tasks, hold named leases or write schedules", async () => {
    for (const sql of [
      "SELECT * FROM tenants",
      "INSERT INTO tasks (id, run_at) SELECT id, run_at FROM tasks LIMIT 0",
      "UPDATE tasks SET dispatch_epoch = 1",
      "UPDATE leases SET epoch = 1",
      "INSERT INTO leases VALUES ('shard:0', 'me', 1, now())",
      "UPDATE schedules SET paused = true",
      "SELECT * FROM dead_letters",
    ]) {
      await refused("chronofence_worker", sql);
    }
    // What it does need: write a result, settle a failure.
    await as("chronofence_worker").query(
      "UPDATE tasks SET result = '1', last_error = '{}', updated_at = now() WHERE false",
    );
  });

  it("only the worker and the dispatcher reach a task partition by name, each for its own columns", async () => {
    const partition = (
      await as("chronofence_worker").query(
        "SELECT tableoid::regclass::text AS name FROM tasks LIMIT 1",
      )
    ).rows[0].name as string;
    expect(partition).toMatch(/^tasks_p[0-9]{8}$/);
    const seen = await as("chronofence_worker").query(
      `SELECT DISTINCT tenant_id FROM ${partition}`,
    );
    expect(seen.rows.length).toBeGreaterThan(0);
    await as("chronofence_worker").query(
      `UPDATE ${partition} SET status = status, attempt = attempt, lease_owner = 'w',
              lease_expires_at = now(), dispatched_at = now(), started_at = now(),
              completed_at = now(), result = '1', updated_at = now() WHERE false`,
    );
    for (const sql of [
      `UPDATE ${partition} SET payload = '{}'`,
      `UPDATE ${partition} SET fencing_token = 1`,
      `UPDATE ${partition} SET run_at = run_at`,
      `DELETE FROM ${partition}`,
      `INSERT INTO ${partition} (id, run_at) SELECT id, run_at FROM ${partition} LIMIT 0`,
    ]) {
      await refused("chronofence_worker", sql);
    }
    // The arm (migrations/000023): its columns and no others.
    await as("chronofence_dispatch").query(
      `UPDATE ${partition} SET status = status, fencing_token = fencing_token, armed_at = now(),
              updated_at = now(), dispatch_shard = 0, dispatch_epoch = 0 WHERE false`,
    );
    for (const sql of [
      `UPDATE ${partition} SET payload = '{}'`,
      `UPDATE ${partition} SET result = '1'`,
      `UPDATE ${partition} SET lease_owner = 'me'`,
      `UPDATE ${partition} SET run_at = run_at`,
      `DELETE FROM ${partition}`,
      `INSERT INTO ${partition} (id, run_at) SELECT id, run_at FROM ${partition} LIMIT 0`,
    ]) {
      await refused("chronofence_dispatch", sql);
    }
    // The API's tenant policy is on `tasks`; a partition named directly would have none.
    for (const role of ["chronofence_api", "chronofence_planner"])
      await refused(role, `SELECT * FROM ${partition}`);
  });

  it("the dispatch roles cannot write results, payloads or leases' holders away", async () => {
    for (const sql of [
      "UPDATE tasks SET result = '1'",
      "UPDATE tasks SET lease_owner = 'me'",
      "UPDATE tasks SET completed_at = now()",
      "SELECT name FROM tenants",
      "INSERT INTO tasks (id, run_at) SELECT id, run_at FROM tasks LIMIT 0",
      "UPDATE schedules SET paused = true",
    ]) {
      await refused("chronofence_dispatch", sql);
    }
    await as("chronofence_dispatch").query(
      "UPDATE tasks SET status = status, fencing_token = nextval('fencing_token_seq') WHERE false",
    );
    await as("chronofence_dispatch").query("SELECT id, grace_ms FROM tenants");
  });

  it("the planner cannot run, finish or bury tasks", async () => {
    for (const sql of [
      "UPDATE tasks SET result = '1'",
      "UPDATE tasks SET lease_owner = 'me'",
      "UPDATE tasks SET fencing_token = 1",
      "INSERT INTO dead_letters SELECT * FROM dead_letters LIMIT 0",
      "UPDATE schedules SET payload = '{}'",
      "UPDATE workflows SET status = 'FAILED'",
      "SELECT nextval('fencing_token_seq')",
    ]) {
      await refused("chronofence_planner", sql);
    }
  });

  it("expired membership leases are deleted through cf_delete_expired_members only, never a shard's", async () => {
    const deleted = await as("chronofence_dispatch").query(
      "SELECT name FROM cf_delete_expired_members(ARRAY['shard:1', 'node:dispatch:gone'], now()) AS name",
    );
    expect(deleted.rows).toEqual([{ name: "node:dispatch:gone" }]);
    const left = await withPg(db.url, (c) => c.query("SELECT name, epoch::int FROM leases"));
    expect(left.rows).toEqual([{ name: "shard:1", epoch: 7 }]);
    await refused("chronofence_worker", "SELECT cf_delete_expired_members('{}', now())");
  });

  it("a NOINHERIT login role that is a member gets nothing once it leaves the role", async () => {
    await withPg(ADMIN_DATABASE_URL, async (c) => {
      await c.query(`CREATE ROLE ${loginRole} LOGIN NOINHERIT`);
      await c.query(`GRANT chronofence_worker TO ${loginRole}`);
    });
    const url = new URL(db.url);
    url.username = loginRole;
    const client = new pg.Client({
      connectionString: url.toString(),
      options: "-c role=chronofence_worker",
    });
    await client.connect();
    try {
      expect((await client.query("SELECT count(*)::int AS n FROM tasks")).rows[0].n).toBe(2);
      await client.query("SET ROLE NONE"); // back to the login role itself
      await expect(client.query("SELECT count(*) FROM tasks")).rejects.toMatchObject({
        code: "42501",
      });
      await expect(client.query("SET ROLE chronofence_dispatch")).rejects.toMatchObject({
        code: "42501",
      });
    } finally {
      await client.end();
    }
  });
});
