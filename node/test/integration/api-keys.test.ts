/**
 * API key scopes and the defence against guessed keys, through the real CLI
 * and the real API on Postgres: `keys create --scopes` prints the key last; a
 * request outside its key's scopes answers 403 `forbidden`; keys made before
 * scopes existed keep all but `admin`; a flood of random keys answers 401
 * then 429, costs Postgres a bounded number of cf_authenticate calls, and the
 * valid keys keep working.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { hashApiKey } from "../../src/adapters/pg/tenant-directory.js";
import { runMigrations } from "../../src/main/admin.js";
import { main } from "../../src/main/cli.js";
import { call, newTenant, startTestApi, type TestApi, type TestTenant } from "./support/api.js";
import { migrateTo } from "./support/migrate-to.js";
import {
  createTestDatabase,
  migratedDatabase,
  requireRedis,
  type TestDatabase,
  testConfig,
  withPg,
} from "./support/services.js";

const FAILURE_BURST = 20;
let db: TestDatabase;
let api: TestApi;
let tenant: TestTenant;
let tenantName: string;

beforeAll(async () => {
  await requireRedis();
  db = await migratedDatabase();
  // cf_authenticate's calls show in pg_stat_user_functions (set before the API connects).
  await withPg(db.url, (c) => c.query(`ALTER DATABASE "${db.name}" SET track_functions = 'all'`));
  const config = testConfig(db.url, {
    authFailureBurst: FAILURE_BURST,
    authFailureRatePerS: 0.001,
  });
  api = await startTestApi(config);
  tenant = await newTenant(config);
  tenantName = await withPg(db.url, async (c) => {
    const found = await c.query("SELECT name FROM tenants WHERE id = $1", [tenant.id]);
    return found.rows[0].name as string;
  });
});

afterAll(async () => {
  await api?.stop();
  await db?.drop();
});

/** Runs the CLI against this file's database; its stdout lines. */
async function cli(...args: string[]): Promise<string[]> {
  const saved = process.env.DATABASE_URL;
  process.env.DATABASE_URL = db.url;
  const lines: string[] = [];
  const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => {
    lines.push(String(line));
  });
  try {
    await main(["node", "chronofence", ...args]);
  } finally {
    spy.mockRestore();
    if (saved === undefined) delete process.env.DATABASE_URL;
    else process.env.DATABASE_URL = saved;
  }
  return lines;
}

const base = () => api.baseUrl;
const submit = (key: string) =>
  call(base(), "POST", "/v1/tasks", { key, body: { type: "scoped", delay_ms: 60_000 } });
const start = (key: string) =>
  call(base(), "POST", `/v1/executions/${randomUUID()}/start`, {
    key,
    body: { fencing_token: "1", worker_id: "w" },
  });

describe("API key scopes", () => {
  it("keys create --scopes prints the key last; a request outside the scopes answers 403", async () => {
    const out = await cli("keys", "create", tenantName, "--scopes", "read");
    const readOnly = out.at(-1)!;
    expect(readOnly).toMatch(/^cfk_[A-Za-z0-9_-]{43}$/);
    expect(out.join("\n")).toMatch(/scopes read$/m);
    expect((await call(base(), "GET", "/v1/tasks", { key: readOnly })).status).toBe(200);
    const refused = await submit(readOnly);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({
      code: "forbidden",
      details: { route: "POST /v1/tasks", required_scope: "submit" },
    });
    expect((await start(readOnly)).body.error.code).toBe("forbidden");
    const count = await withPg(db.url, (c) =>
      c.query("SELECT count(*)::int AS n FROM tasks WHERE type = 'scoped'"),
    );
    expect(count.rows[0].n).toBe(0);
  });

  it("the worker protocol needs execute; an execute-only key cannot submit", async () => {
    const worker = (await cli("keys", "create", tenantName, "--scopes", "execute")).at(-1)!;
    expect((await start(worker)).status).toBe(404); // past the scope check: no such task
    expect((await submit(worker)).status).toBe(403);
    expect((await start(tenant.apiKey)).status).toBe(404); // the tenant's first key: all but admin
    expect((await submit(tenant.apiKey)).status).toBe(201);
  });

  it("refuses unknown scopes and unknown tenants", async () => {
    await expect(cli("keys", "create", tenantName, "--scopes", "read,root")).rejects.toThrow(
      /unknown: root/,
    );
    await expect(cli("keys", "create", "nobody")).rejects.toThrow(/no tenant named nobody/);
  });

  it("keys made before scopes existed keep every scope but admin", async () => {
    const old = await createTestDatabase();
    try {
      await migrateTo(old.url, 9);
      await withPg(old.url, async (c) => {
        const tenant = randomUUID();
        await c.query(
          "INSERT INTO tenants (id, name, rate_per_s, burst, max_payload_bytes, grace_ms, created_at) VALUES ($1, 'old', 1, 1, 1, 0, now())",
          [tenant],
        );
        await c.query(
          "INSERT INTO api_keys (id, tenant_id, key_hash, created_at) VALUES ($1, $2, $3, now())",
          [randomUUID(), tenant, Buffer.from(hashApiKey("cfk_old"))],
        );
      });
      await runMigrations(testConfig(old.url));
      const scopes = await withPg(old.url, (c) => c.query("SELECT scopes FROM api_keys"));
      expect(scopes.rows).toEqual([{ scopes: ["submit", "read", "execute"] }]);
    } finally {
      await old.drop();
    }
  });
});

describe("a flood of random keys", () => {
  it("answers 401 then 429, costs Postgres a bounded number of lookups, and valid keys keep working", async () => {
    const calls = () =>
      withPg(db.url, async (c) => {
        const r = await c.query(
          "SELECT coalesce(sum(calls), 0)::int AS n FROM pg_stat_user_functions WHERE funcname = 'cf_authenticate'",
        );
        return r.rows[0].n as number;
      });
    const before = await calls();
    const statuses = new Map<number, number>();
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, () =>
          call(base(), "GET", "/v1/tasks", {
            key: `cfk_${randomBytes(32).toString("base64url")}`,
          }),
        ),
      );
      for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
      // The valid key answers between the rounds, from its cache.
      expect((await call(base(), "GET", "/v1/tasks", { key: tenant.apiKey })).status).toBe(200);
    }
    // This client's budget of unknown keys (the new keys of the tests above took a few), then 429.
    expect([...statuses.keys()].sort()).toEqual([401, 429]);
    expect(statuses.get(401)!).toBeLessThanOrEqual(FAILURE_BURST);
    expect(statuses.get(429)!).toBeGreaterThanOrEqual(500 - FAILURE_BURST);
    // Statistics reach pg_stat_user_functions within about ten seconds of a backend going idle.
    await expect
      .poll(calls, { timeout: 30_000, interval: 500 })
      .toBeGreaterThanOrEqual(before + FAILURE_BURST);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    // The random keys' lookups, plus at most a few of the valid key (its cache expiring).
    expect((await calls()) - before).toBeLessThanOrEqual(FAILURE_BURST + 5);
  });
});
