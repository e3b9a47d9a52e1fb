/**
 * Tenant isolation in Postgres itself (docs/architecture.md, invariant 7):
 * row-level security checked directly, the way adapters/pg runs the API's
 * statements — a pool that assumes chronofence_api at connection start, and
 * app.tenant_id set per transaction (sql/transactions.ts beginForTenant).
 *
 * For every tenant-scoped table and SELECT, INSERT, UPDATE, DELETE, tenant B
 * acts on tenant A's rows: it sees none, changes none, and cannot write a row
 * in A's name (refused by the policy's WITH CHECK, or by the missing grant
 * where the API role has no such privilege). Each refusal has its positive
 * control: B does the same to its own rows and it works (where granted), so
 * a zero is the policy's doing and not a query that matches nothing. Each
 * case runs in a transaction that is rolled back; afterwards A's rows are
 * compared with a snapshot taken before.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPgPool, type PgPool } from "../../src/adapters/pg/pool.js";
import { beginForTenant } from "../../src/adapters/pg/sql/transactions.js";
import {
  type ApiFixture,
  call,
  newTenant,
  startApiFixture,
  type TestTenant,
} from "./support/api.js";
import { withPg } from "./support/services.js";

interface TableSpec {
  table: string;
  /**
   * Fields that make a copy of a row unique (a new primary key, a new unique name); and a
   * JSON `null` payload, which the copy through jsonb would turn into SQL NULL.
   */
  fresh: () => Record<string, unknown>;
  /** A column to write in UPDATE checks (`SET col = col`). */
  column: string;
}

let copies = 0;
const TABLES: TableSpec[] = [
  { table: "tasks", fresh: () => ({ id: randomUUID(), payload: {} }), column: "updated_at" },
  {
    table: "idempotency_keys",
    fresh: () => ({ idempotency_key: `rls-copy-${++copies}` }),
    column: "task_run_at",
  },
  { table: "audit_log", fresh: () => ({ id: 9_000_000_000 + ++copies }), column: "at" },
  {
    table: "dead_letters",
    fresh: () => ({ id: randomUUID(), payload: {} }),
    column: "replayed_at",
  },
  {
    table: "schedules",
    fresh: () => ({ id: randomUUID(), name: `rls copy ${++copies}`, payload: {} }),
    column: "updated_at",
  },
  {
    table: "schedule_occurrences",
    fresh: () => ({ scheduled_for: new Date(Date.UTC(2031, 0, 1, 0, 0, ++copies)).toISOString() }),
    column: "created_at",
  },
  { table: "workflows", fresh: () => ({ id: randomUUID() }), column: "updated_at" },
  {
    table: "workflow_nodes",
    fresh: () => ({ task_id: randomUUID(), node_key: `copy-${++copies}` }),
    column: "state",
  },
  { table: "workflow_edges", fresh: () => ({ child_task_id: randomUUID() }), column: "parent_key" },
];

let fixture: ApiFixture;
let a: TestTenant;
let b: TestTenant;
/** The API role's pool, as main/api.ts builds it. */
let apiPool: PgPool;

beforeAll(async () => {
  fixture = await startApiFixture();
  a = fixture.tenant;
  b = await newTenant(fixture.config);
  for (const t of [a, b]) await rowsFor(t);
  apiPool = createPgPool({
    connectionString: fixture.db.url,
    maxConnections: 2,
    statementTimeoutMs: 10_000,
    connectTimeoutMs: 5000,
    role: "chronofence_api",
    applicationName: "rls-test",
    onError: () => undefined,
  });
});

afterAll(async () => {
  await apiPool?.end();
  await fixture?.stop();
});

/** At least one row of the tenant in every table: through the API where it writes them, else as the login role. */
async function rowsFor(t: TestTenant): Promise<void> {
  const post = async (path: string, body: unknown) => {
    const answer = await call(fixture.api.baseUrl, "POST", path, { key: t.apiKey, body });
    if (answer.status !== 201) throw new Error(`${path}: ${JSON.stringify(answer.body)}`);
    return answer.body;
  };
  const task = await post("/v1/tasks", { type: "rls", idempotency_key: "rls-1", delay_ms: 60_000 });
  const schedule = await post("/v1/schedules", { name: "rls", expression: "@daily", type: "rls" });
  await post("/v1/workflows", {
    nodes: [
      { key: "a", type: "rls" },
      { key: "b", type: "rls", depends_on: ["a"] },
    ],
  });
  await withPg(fixture.db.url, async (c) => {
    await c.query(
      `INSERT INTO dead_letters (id, tenant_id, task_id, type, payload, attempt, max_attempts,
                                 fencing_token, error, reason, run_at, dead_at)
       VALUES ($1, $2, $3, 'rls', 'null', 1, 1, 1, '{"message":"x"}', 'exhausted', now(), now())`,
      [randomUUID(), t.id, task.id],
    );
    await c.query(
      `INSERT INTO schedule_occurrences (schedule_id, scheduled_for, tenant_id, outcome, catch_up, created_at)
       VALUES ($1, now(), $2, 'skipped_overlap', false, now())`,
      [schedule.id, t.id],
    );
  });
}

/** Every row of a tenant in every table, as the login role sees them (no row-level security). */
const snapshotOf = (tenantId: string) =>
  withPg(fixture.db.url, async (c) => {
    const rows: Record<string, unknown[]> = {};
    for (const { table } of TABLES) {
      const result = await c.query(
        `SELECT to_jsonb(x) AS row FROM ${table} x WHERE tenant_id = $1 ORDER BY to_jsonb(x)::text`,
        [tenantId],
      );
      rows[table] = result.rows.map((r) => r.row);
    }
    return rows;
  });

type Outcome = { rows: number } | { refused: "row-level security" | "permission denied" };

/** Runs `sql` as the API role for `tenantId` (or no tenant), in a transaction rolled back after. */
async function asTenant(
  tenantId: string | null,
  sql: string,
  params: unknown[] = [],
): Promise<Outcome & { value?: unknown }> {
  const client = await apiPool.connect();
  try {
    await client.query(tenantId === null ? "BEGIN" : beginForTenant(tenantId));
    try {
      const result = await client.query(sql, params);
      return { rows: result.rowCount ?? 0, value: result.rows[0] };
    } catch (error) {
      const message = (error as Error).message;
      if (/row-level security/.test(message)) return { refused: "row-level security" };
      if (/permission denied/.test(message)) return { refused: "permission denied" };
      throw error;
    }
  } finally {
    await client.query("ROLLBACK");
    client.release();
  }
}

const privilege = (table: string, column: string, op: string) =>
  withPg(fixture.db.url, async (c) => {
    const [sql, params] =
      op === "UPDATE"
        ? [
            "SELECT has_column_privilege('chronofence_api', $1, $2, 'UPDATE') AS ok",
            [table, column],
          ]
        : ["SELECT has_table_privilege('chronofence_api', $1, $2) AS ok", [table, op]];
    return (await c.query(sql, params)).rows[0].ok as boolean;
  });

/** The columns an INSERT may name: all but the generated ones (tasks.unfinished). */
const writableColumns = (table: string) =>
  withPg(fixture.db.url, async (c) => {
    const result = await c.query(
      `SELECT attname FROM pg_attribute
        WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = ''
        ORDER BY attnum`,
      [table],
    );
    return result.rows.map((r) => `"${r.attname}"`).join(", ");
  });

/** A copy of one of the actor's own rows, with `patch` applied: `INSERT … SELECT` under its policy. */
const insertCopy = async (table: string) => {
  const columns = await writableColumns(table);
  return `INSERT INTO ${table} (${columns}) OVERRIDING SYSTEM VALUE
   SELECT ${columns}
     FROM (SELECT (jsonb_populate_record(NULL::${table}, to_jsonb(x) || $1::jsonb)).*
             FROM ${table} x WHERE x.tenant_id = $2 LIMIT 1) copy`;
};

describe("row-level security, as chronofence_api with app.tenant_id set", () => {
  let before: Record<string, unknown[]>;

  beforeAll(async () => {
    before = await snapshotOf(a.id);
    for (const { table } of TABLES) expect(before[table], table).not.toEqual([]);
  });

  afterAll(async () => {
    // Nothing B tried changed any of A's rows.
    expect(await snapshotOf(a.id)).toEqual(before);
  });

  it.each(TABLES)("$table: B sees, changes and writes none of A's rows", async (spec) => {
    const { table, column } = spec;
    // SELECT: none of A's rows; all of its own.
    const aRows = (before[table] ?? []).length;
    expect(aRows).toBeGreaterThan(0);
    expect(
      await asTenant(b.id, `SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1`, [a.id]),
    ).toMatchObject({ value: { n: 0 } });
    expect(
      await asTenant(a.id, `SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1`, [a.id]),
    ).toMatchObject({ value: { n: aRows } });
    expect(await asTenant(null, `SELECT count(*)::int AS n FROM ${table}`)).toMatchObject({
      value: { n: 0 },
    });

    // INSERT: a row in A's name is refused; the same copy in its own name is not.
    const canInsert = await privilege(table, column, "INSERT");
    const intoA = await asTenant(b.id, await insertCopy(table), [
      JSON.stringify({ ...spec.fresh(), tenant_id: a.id }),
      b.id,
    ]);
    const intoOwn = await asTenant(b.id, await insertCopy(table), [
      JSON.stringify(spec.fresh()),
      b.id,
    ]);
    if (canInsert) {
      expect(intoA).toEqual({ refused: "row-level security" });
      expect(intoOwn).toMatchObject({ rows: 1 });
    } else {
      expect(intoA).toEqual({ refused: "permission denied" });
      expect(intoOwn).toEqual({ refused: "permission denied" });
    }

    // UPDATE: A's rows match nothing; its own do; moving its own row to A is refused.
    const canUpdate = await privilege(table, column, "UPDATE");
    const set = `UPDATE ${table} SET ${column} = ${column} WHERE tenant_id = $1`;
    const updateA = await asTenant(b.id, set, [a.id]);
    const updateOwn = await asTenant(b.id, set, [b.id]);
    if (canUpdate) {
      expect(updateA).toMatchObject({ rows: 0 });
      expect(updateOwn).toMatchObject({ rows: expect.any(Number) });
      expect((updateOwn as { rows: number }).rows).toBeGreaterThan(0);
    } else {
      expect(updateA).toEqual({ refused: "permission denied" });
      expect(updateOwn).toEqual({ refused: "permission denied" });
    }
    const move = await asTenant(b.id, `UPDATE ${table} SET tenant_id = $1 WHERE tenant_id = $2`, [
      a.id,
      b.id,
    ]);
    const canMove = await privilege(table, "tenant_id", "UPDATE");
    expect(move).toEqual({ refused: canMove ? "row-level security" : "permission denied" });

    // DELETE: A's rows match nothing; its own do.
    const canDelete = await privilege(table, column, "DELETE");
    const remove = `DELETE FROM ${table} WHERE tenant_id = $1`;
    const deleteA = await asTenant(b.id, remove, [a.id]);
    const deleteOwn = await asTenant(b.id, remove, [b.id]);
    if (canDelete) {
      expect(deleteA).toMatchObject({ rows: 0 });
      expect((deleteOwn as { rows: number }).rows).toBeGreaterThan(0);
    } else {
      expect(deleteA).toEqual({ refused: "permission denied" });
      expect(deleteOwn).toEqual({ refused: "permission denied" });
    }
  });
});
