/**
 * The embedded Postgres adapter (adapters/pglite): the API's pool runs as
 * chronofence_api under row-level security although PGlite has one session
 * and ignores startup options; the owner's pools are not; one session is
 * shared without transactions interleaving.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/adapters/clock/system-clock.js";
import { type PgPool, withTenant, withTransaction } from "../../src/adapters/pg/pool.js";
import { PgTenantDirectory } from "../../src/adapters/pg/tenant-directory.js";
import { uuidv7From } from "../../src/main/ids.js";
import { startTestApi, submitTask, type TestApi } from "./support/api.js";
import { type EmbeddedBackend, openEmbeddedBackend } from "./support/embedded.js";
import { testConfig } from "./support/services.js";

let backend: EmbeddedBackend;
let api: TestApi;
let owner: PgPool;
let asApi: PgPool;
let tenantA: string;
let tenantB: string;
let taskOfA: string;

beforeAll(async () => {
  backend = await openEmbeddedBackend();
  owner = backend.postgres.pool(null);
  asApi = backend.postgres.pool("chronofence_api");
  api = await startTestApi(testConfig("postgres://embedded.invalid/x"), systemClock, backend.infra);
  const tenants = new PgTenantDirectory(owner, uuidv7From(systemClock));
  const a = await tenants.create("a", {}, Date.now());
  const b = await tenants.create("b", {}, Date.now());
  tenantA = a.tenant.id;
  tenantB = b.tenant.id;
  taskOfA = await submitTask(api.baseUrl, a.apiKey, { type: "secret", delay_ms: 60_000 });
});

afterAll(async () => {
  await api?.stop();
  await backend?.close();
});

const countTasks = (db: Pick<PgPool, "query">) =>
  db.query("SELECT count(*)::int AS n FROM tasks").then((r) => r.rows[0].n as number);

describe("row-level security on the embedded Postgres", () => {
  it("scopes the API's tenant transactions to app.tenant_id, as chronofence_api", async () => {
    const asB = await withTenant(asApi, tenantB, async (c) => ({
      user: (await c.query("SELECT current_user AS u")).rows[0].u,
      tasks: await countTasks(c),
    }));
    expect(asB).toEqual({ user: "chronofence_api", tasks: 0 });
    const asA = await withTenant(asApi, tenantA, (c) => c.query("SELECT id FROM tasks"));
    expect(asA.rows.map((r) => r.id)).toEqual([taskOfA]);
  });

  it("runs the API's lone statements as chronofence_api too (no tenant: no rows)", async () => {
    expect((await asApi.query("SELECT current_user AS u")).rows[0].u).toBe("chronofence_api");
    expect(await countTasks(asApi)).toBe(0);
    await expect(asApi.query("SELECT count(*) FROM cf_migrations")).rejects.toMatchObject({
      code: "42501",
    });
  });

  it("leaves the owner's pools as the owner, before and after an API transaction", async () => {
    expect(await countTasks(owner)).toBe(1);
    await withTenant(asApi, tenantB, countTasks);
    expect((await owner.query("SELECT current_user AS u")).rows[0].u).toBe("postgres");
    expect(await withTransaction(owner, countTasks)).toBe(1);
  });

  it("refuses a statement outside a transaction on an API connection rather than run it as the owner", async () => {
    const client = await asApi.connect();
    try {
      await expect(client.query("SELECT 1")).rejects.toThrow(/outside a transaction/);
    } finally {
      client.release();
    }
  });
});

describe("one session for every pool", () => {
  it("runs concurrent transactions of several pools one after another, never interleaved", async () => {
    await owner.query("CREATE TABLE IF NOT EXISTS serial_check (writer int, step int)");
    const writers = Array.from({ length: 8 }, (_, writer) =>
      withTransaction(writer % 2 ? owner : backend.postgres.pool(null), async (c) => {
        for (let step = 0; step < 5; step++) {
          await c.query("INSERT INTO serial_check VALUES ($1, $2)", [writer, step]);
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
        if (writer === 3) throw new Error("rolled back");
      }).catch(() => "rolled back"),
    );
    expect((await Promise.all(writers)).filter((w) => w === "rolled back")).toHaveLength(1);
    const rows = (await owner.query("SELECT writer FROM serial_check ORDER BY ctid")).rows;
    const order = rows.map((r) => r.writer as number);
    // Each committed transaction's rows are contiguous: nothing ran between its statements.
    const runs = order.filter((w, i) => i === 0 || order[i - 1] !== w);
    expect(runs).toHaveLength(7);
    expect(new Set(runs).size).toBe(7);
    expect(order).not.toContain(3);
  });
});
