/** The operator commands, run through the real CLI entry point against a test database. */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { defaultMigrationsDirectory, listMigrations } from "../../src/adapters/pg/migrate.js";
import { main } from "../../src/main/cli.js";
import { createTestDatabase, type TestDatabase, withPg } from "./support/services.js";

const DAY_MS = 86_400_000;

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  // This file's worker is its own process: the CLI reads its config from here.
  process.env.DATABASE_URL = db.url;
  process.env.CF_HORIZON_DAYS = "3";
});

afterAll(async () => {
  await db?.drop();
});

async function run(...args: string[]): Promise<string[]> {
  const lines: string[] = [];
  const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => {
    lines.push(String(line));
  });
  try {
    await main(["node", "chronofence", ...args]);
  } finally {
    spy.mockRestore();
  }
  return lines;
}

describe("chronofence CLI", () => {
  it("migrates twice without harm", async () => {
    const count = (await listMigrations(await defaultMigrationsDirectory())).length;
    expect((await run("migrate")).join("\n")).toMatch(`${count} applied, 0 already applied`);
    expect((await run("migrate")).join("\n")).toMatch(`0 applied, ${count} already applied`);
  });

  it("maintain creates the days a longer horizon needs and drops those past retention, keeping pending ones", async () => {
    // migrate makes days from 30 days back (the default retention) to 3 + 2 days ahead
    // (a no-op when the test above has run).
    await run("migrate");
    const dayName = (offsetDays: number) =>
      `tasks_p${new Date(Date.now() + offsetDays * DAY_MS).toISOString().slice(0, 10).replaceAll("-", "")}`;
    const partitions = async () =>
      (
        await withPg(db.url, (c) =>
          c.query(
            `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
              WHERE i.inhparent = 'tasks'::regclass ORDER BY 1`,
          ),
        )
      ).rows.map((r) => r.name as string);
    expect(await partitions()).toContain(dayName(-30));
    expect(await partitions()).not.toContain(dayName(7));
    // A task still pending on a day past the new retention keeps its day.
    await withPg(db.url, (c) =>
      c.query(
        `INSERT INTO tasks (id, tenant_id, type, payload, priority, status, run_at, max_attempts, timeout_ms,
                            backoff_strategy, backoff_base_ms, backoff_max_ms, created_at, updated_at)
         VALUES (gen_random_uuid(), gen_random_uuid(), 'todo', '{}', 'bulk', 'SCHEDULED',
                 now() - interval '20 days', 1, 1, 'fixed', 1, 1, now(), now())`,
      ),
    );
    process.env.CF_HORIZON_DAYS = "5";
    process.env.CF_RETENTION_DAYS = "10";
    try {
      const [line, ...rest] = await run("maintain");
      expect(rest).toEqual([]);
      const report = JSON.parse(line!);
      expect(report.created).toBe(2); // days 6 and 7 ahead
      // Days 30 .. 11 back, but the one holding the pending task.
      const expired = Array.from({ length: 20 }, (_, i) => dayName(-30 + i));
      expect(report.keptWithPendingTasks).toEqual([dayName(-20)]);
      expect(report.dropped).toEqual(expired.filter((name) => name !== dayName(-20)));
      const left = await partitions();
      expect(left).toContain(dayName(7));
      expect(left).toContain(dayName(-10));
      expect(left.filter((name) => name < dayName(-10))).toEqual([dayName(-20)]);
      expect(JSON.parse((await run("maintain"))[0]!)).toMatchObject({ created: 0, dropped: [] });
    } finally {
      process.env.CF_HORIZON_DAYS = "3";
      delete process.env.CF_RETENTION_DAYS;
    }
  });

  it("creates a tenant, printing its API key last; lists it; revokes the key", async () => {
    const out = await run("tenants", "create", "acme", "--rate", "50", "--burst", "100");
    const apiKey = out.at(-1)!;
    expect(apiKey).toMatch(/^cfk_[A-Za-z0-9_-]{43}$/);
    const keyId = /api key id (\S+)/.exec(out.join("\n"))![1]!;
    const stored = await withPg(db.url, (c) =>
      c.query("SELECT key_hash FROM api_keys WHERE id = $1", [keyId]),
    );
    expect(stored.rows[0].key_hash).toHaveLength(32); // only the hash is stored
    const list = await run("tenants", "list");
    expect(list.join("\n")).toMatch(/acme {2}rate=50\/s burst=100 .* keys=1/);
    expect(await run("keys", "revoke", keyId)).toEqual([`revoked ${keyId}`]);
    await expect(run("keys", "revoke", keyId)).rejects.toThrow(/no active API key/);
    expect((await run("tenants", "list")).join("\n")).toMatch(/keys=0/);
  });

  it("refuses a duplicate tenant name", async () => {
    await expect(run("tenants", "create", "acme")).rejects.toThrow(/already exists/);
  });

  it("creates a tenant with retry defaults, and refuses a base above the max it will meet", async () => {
    await run("tenants", "create", "beta", "--max-attempts", "7", "--backoff-base-ms", "50");
    const list = (await run("tenants", "list")).join("\n");
    expect(list).toMatch(/beta .* max_attempts=7 backoff_base=50ms backoff_max=-ms/);
    await expect(
      run("tenants", "create", "gamma", "--backoff-base-ms", "5000", "--backoff-max-ms", "4000"),
    ).rejects.toThrow(/base_ms \(5000, the tenant's default\) must not exceed/);
    await expect(run("tenants", "create", "delta", "--max-attempts", "101")).rejects.toThrow(
      /maxAttempts must be an integer from 1 to 100/,
    );
  });

  it("updates a tenant's limits and retry defaults, keeping what it does not name", async () => {
    await run("tenants", "create", "epsilon", "--rate", "10", "--max-attempts", "4");
    const updated = await run(
      "tenants",
      "update",
      "epsilon",
      "--rate",
      "25",
      "--backoff-base-ms",
      "200",
    );
    expect(updated.join("\n")).toMatch(
      /epsilon {2}rate=25\/s burst=2000 .* max_attempts=4 backoff_base=200ms backoff_max=-ms/,
    );
    expect((await run("tenants", "list")).join("\n")).toMatch(/epsilon {2}rate=25\/s/);
    const audit = await withPg(db.url, (c) =>
      c.query("SELECT details FROM audit_log WHERE action = 'tenant.update'"),
    );
    expect(audit.rows[0].details).toMatchObject({ from: { ratePerS: 10 }, to: { ratePerS: 25 } });
    await expect(
      run("tenants", "update", "epsilon", "--backoff-base-ms", "7200000"),
    ).rejects.toThrow(/must not exceed/);
    await expect(run("tenants", "update", "nobody", "--rate", "1")).rejects.toThrow(
      /no tenant named nobody/,
    );
  });
});
