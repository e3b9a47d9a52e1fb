/** The operator commands, run through the real CLI entry point against a test database. */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { defaultMigrationsDirectory, listMigrations } from "../../src/adapters/pg/migrate.js";
import { main } from "../../src/main/cli.js";
import { createTestDatabase, type TestDatabase, withPg } from "./support/services.js";

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
