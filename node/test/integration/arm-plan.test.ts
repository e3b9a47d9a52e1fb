/**
 * The arm probes tasks_unfinished_shard_run_at_idx once per claim, by its
 * shard, run_at and id, in the dispatcher's prepared form on the day's
 * partition (planned once per connection: a generic plan) and on `tasks`.
 * The control inlines `claim` as before session 32: the claim's shard is then
 * the fence's, and the plan reads every unfinished task of the shard between
 * the batch's first and last run_at, once per claim.
 */
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textArray } from "../../src/adapters/pg/array-param.js";
import { ARM_TASKS, armTasks } from "../../src/adapters/pg/sql/dispatch.js";
import { shardLeaseName } from "../../src/domain/fair-share.js";
import { FakeClock } from "../support/fake-clock.js";
import { migratedDatabase, type TestDatabase, withPg } from "./support/services.js";

const clock = new FakeClock(Date.parse("2030-03-10T12:00:00Z"));
const DAY = "20300312";
const MINUTE_START_MS = Date.parse("2030-03-12T10:00:00Z");
const TASKS = 20_000;
const FENCED_SHARDS = [0, 1, 2, 3];
const CLAIMS = 256;
let db: TestDatabase;

beforeAll(async () => {
  db = await migratedDatabase(clock);
  await withPg(db.url, async (c) => {
    // A minute's backlog of SCHEDULED tasks: about 1,250 a shard.
    await c.query(
      `INSERT INTO tasks (id, tenant_id, type, payload, priority, status, run_at, max_attempts,
                          timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
                          created_at, updated_at)
       SELECT gen_random_uuid(), gen_random_uuid(), 'noop', '{}', 'standard', 'SCHEDULED',
              to_timestamp(($1 + i * (60000.0 / $2)) / 1000.0), 3, 30000, 'exponential', 1000,
              60000, now(), now()
         FROM generate_series(0, $2 - 1) AS i`,
      [MINUTE_START_MS, TASKS],
    );
    await c.query(
      `INSERT INTO leases (name, owner, epoch, expires_at)
       SELECT name, 'node-1', 1, timestamptz '2031-01-01' FROM unnest($1::text[]) AS name`,
      [FENCED_SHARDS.map((s) => shardLeaseName(s))],
    );
  });
});

afterAll(async () => {
  await db?.drop();
});

/** The arm's parameters for `CLAIMS` tasks of the fenced shards spread over the minute. */
async function armParameters(c: pg.Client): Promise<unknown[]> {
  const { rows } = await c.query(
    `SELECT id, hot_shard, extract(epoch FROM run_at) * 1000 AS run_at_ms
       FROM tasks WHERE hot_shard = ANY($1) ORDER BY id LIMIT ${CLAIMS}`,
    [FENCED_SHARDS],
  );
  const runAtsMs = rows.map((r) => Number(r.run_at_ms));
  return [
    FENCED_SHARDS,
    FENCED_SHARDS.map((s) => shardLeaseName(s)),
    FENCED_SHARDS.map(() => "node-1"),
    FENCED_SHARDS.map(() => 1),
    clock.nowMs(),
    rows.map((r) => r.id),
    runAtsMs,
    rows.map((r) => r.hot_shard),
    new Date(Math.min(...runAtsMs)).toISOString(),
    new Date(Math.max(...runAtsMs)).toISOString(),
  ];
}

const ARM_TYPES =
  "int[], text[], text[], bigint[], float8, uuid[], float8[], int[], timestamptz, timestamptz";

/** The generic plan of the statement prepared as the dispatcher prepares it. */
async function genericPlanOf(c: pg.Client, sql: string): Promise<PlanNode> {
  const values = await armParameters(c);
  await c.query("SET plan_cache_mode = force_generic_plan");
  await c.query(`PREPARE arm (${ARM_TYPES}) AS ${sql}`);
  try {
    const literals = values
      .map((v) => c.escapeLiteral(Array.isArray(v) ? textArray(v.map(String)) : String(v)))
      .join(", ");
    const explained = await c.query(`EXPLAIN (FORMAT JSON) EXECUTE arm (${literals})`);
    return explained.rows[0]["QUERY PLAN"][0].Plan;
  } finally {
    await c.query("DEALLOCATE arm");
    await c.query("RESET plan_cache_mode");
  }
}

/** The plan of the statement as sent unprepared, with its values. */
async function customPlanOf(c: pg.Client, sql: string): Promise<PlanNode> {
  const explained = await c.query(`EXPLAIN (FORMAT JSON) ${sql}`, await armParameters(c));
  return explained.rows[0]["QUERY PLAN"][0].Plan;
}

// biome-ignore lint/suspicious/noExplicitAny: an EXPLAIN (FORMAT JSON) node
type PlanNode = any;

function* nodes(plan: PlanNode): Generator<PlanNode> {
  yield plan;
  for (const child of plan.Plans ?? []) yield* nodes(child);
}

/** Whether every read of the task partitions is a probe by a claim's shard, run_at and id. */
function probesPerClaim(plan: PlanNode): boolean {
  const reads = [...nodes(plan)].filter(
    (n) => /Scan/.test(n["Node Type"]) && /^tasks_p/.test(n["Relation Name"] ?? ""),
  );
  return (
    reads.length > 0 &&
    reads.every(
      (n) =>
        /Index Scan/.test(n["Node Type"]) &&
        /hot_shard = c\w*\.shard/.test(n["Index Cond"]) &&
        /run_at = c\w*\.run_at/.test(n["Index Cond"]) &&
        /\bid = c\w*\.id/.test(n["Index Cond"]),
    )
  );
}

/** The statement with `claim` inlined, as before session 32. */
const inlined = (sql: string) => {
  expect(sql).toContain("claim AS MATERIALIZED (");
  return sql.replace("claim AS MATERIALIZED (", "claim AS (");
};

describe("the arm's plan", () => {
  it("probes once per claim on the day's partition, prepared, with or without statistics", async () => {
    await withPg(db.url, async (c) => {
      const onPartition = armTasks(`tasks_p${DAY}`);
      expect(probesPerClaim(await genericPlanOf(c, onPartition))).toBe(true);
      expect(probesPerClaim(await genericPlanOf(c, inlined(onPartition)))).toBe(false);
      await c.query(`ANALYZE tasks_p${DAY}`);
      expect(probesPerClaim(await genericPlanOf(c, onPartition))).toBe(true);
    });
  });

  it("probes once per claim on tasks, planned with its values", async () => {
    await withPg(db.url, async (c) => {
      expect(probesPerClaim(await customPlanOf(c, ARM_TASKS))).toBe(true);
    });
  });
});
