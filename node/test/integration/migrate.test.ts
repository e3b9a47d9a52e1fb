/** The migration runner and partition maintenance, on real Postgres. */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  defaultMigrationsDirectory,
  listMigrations,
  migrate,
} from "../../src/adapters/pg/migrate.js";
import { maintainTaskPartitions } from "../../src/adapters/pg/partitions.js";
import { createPgPool } from "../../src/adapters/pg/pool.js";
import { FakeClock } from "../support/fake-clock.js";
import { createTestDatabase, type TestDatabase, withPg } from "./support/services.js";

const DAY_MS = 86_400_000;
let db: TestDatabase;
let migrationsDir: string;

beforeAll(async () => {
  db = await createTestDatabase();
  migrationsDir = await defaultMigrationsDirectory();
});

afterAll(async () => {
  await db?.drop();
});

const ledger = () =>
  withPg(
    db.url,
    async (c) => (await c.query("SELECT id, name FROM cf_migrations ORDER BY id")).rows,
  );

describe("migrate", () => {
  it("applies every file once, even when two migrators start together", async () => {
    const files = await listMigrations(migrationsDir);
    const [one, two] = await Promise.all([
      migrate(db.url, migrationsDir),
      migrate(db.url, migrationsDir),
    ]);
    expect([...one.applied, ...two.applied]).toHaveLength(files.length);
    expect((await ledger()).map((r) => r.id)).toEqual(files.map((f) => f.id));
  });

  it("is a no-op the second time", async () => {
    const again = await migrate(db.url, migrationsDir);
    expect(again.applied).toEqual([]);
  });

  it("rolls a failing file back with its ledger row, so it is retried next time", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "cf-migrations-"));
    try {
      for (const file of await listMigrations(migrationsDir)) {
        await writeFile(path.join(dir, path.basename(file.file)), "SELECT 1");
      }
      // After the highest number: the released files leave gaps (13–16).
      const highest = Math.max(...(await listMigrations(migrationsDir)).map((f) => f.id));
      const next = String(highest + 1).padStart(6, "0");
      await writeFile(
        path.join(dir, `${next}_broken.sql`),
        "CREATE TABLE cf_probe (x int); SELECT 1/0;",
      );
      await expect(migrate(db.url, dir)).rejects.toThrow(/broken failed/);
      const probe = await withPg(db.url, (c) => c.query("SELECT to_regclass('cf_probe') AS t"));
      expect(probe.rows[0].t).toBeNull();
      expect((await ledger()).map((r) => r.name)).not.toContain("broken");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses two files with one number, and lists the others in order across a gap", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "cf-migrations-"));
    try {
      await writeFile(path.join(dir, "000003_c.sql"), "SELECT 1");
      await writeFile(path.join(dir, "000001_a.sql"), "SELECT 1");
      expect((await listMigrations(dir)).map((m) => m.id)).toEqual([1, 3]);
      await writeFile(path.join(dir, "000003_d.sql"), "SELECT 1");
      await expect(listMigrations(dir)).rejects.toThrow(/two migrations are numbered 3/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("partition maintenance", () => {
  it("creates days ahead, and drops old days unless they hold pending tasks", async () => {
    const clock = new FakeClock(Date.parse("2030-03-10T12:00:00Z"));
    const pool = createPgPool({
      connectionString: db.url,
      maxConnections: 1,
      statementTimeoutMs: 60_000,
      connectTimeoutMs: 2000,
      role: null,
      applicationName: "test",
      onError: () => undefined,
    });
    try {
      const plan = { horizonMs: 3 * DAY_MS, retentionDays: 2 };
      const first = await maintainTaskPartitions(pool, plan, clock.nowMs());
      expect(first.created).toBe(8); // 03-08 .. 03-15
      expect((await maintainTaskPartitions(pool, plan, clock.nowMs())).created).toBe(0);
      await withPg(db.url, (c) =>
        c.query(
          `INSERT INTO tasks (id, tenant_id, type, payload, priority, status, run_at, max_attempts, timeout_ms,
                              backoff_strategy, backoff_base_ms, backoff_max_ms, created_at, updated_at)
           VALUES (gen_random_uuid(), gen_random_uuid(), 'done', '{}', 'bulk', 'COMPLETED', '2030-03-08T10:00Z', 1, 1, 'fixed', 1, 1, now(), now()),
                  (gen_random_uuid(), gen_random_uuid(), 'todo', '{}', 'bulk', 'SCHEDULED', '2030-03-09T10:00Z', 1, 1, 'fixed', 1, 1, now(), now())`,
        ),
      );
      clock.advance(3 * DAY_MS); // now 03-13: retention keeps 03-11 onwards
      const later = await maintainTaskPartitions(pool, plan, clock.nowMs());
      expect(later.dropped).toEqual(["tasks_p20300308", "tasks_p20300310"]);
      expect(later.keptWithPendingTasks).toEqual(["tasks_p20300309"]);
      expect(later.created).toBe(3); // 03-16 .. 03-18
    } finally {
      await pool.end();
    }
  });
});
