/**
 * A task partition with rows but no statistics on run_at is analyzed by
 * cf_analyze_task_partitions (migrations/000021), and the workers' batched
 * start and completion probe the partition's index once per row whatever its
 * statistics say: the batch's rows come from cf_start_batch and
 * cf_complete_batch, estimated at one row (migrations/000022). Each control
 * puts back what those statements had before, and gets the plan that reads
 * the batch's whole day and joins it with the batch.
 */
import { randomUUID } from "node:crypto";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { analyzeHotTaskPartitions } from "../../src/adapters/pg/partitions.js";
import {
  COMPLETE_MANY_OUTSIDE_WORKFLOWS,
  START_MANY,
} from "../../src/adapters/pg/sql/execution.js";
import { FakeClock } from "../support/fake-clock.js";
import { migratedDatabase, type TestDatabase, testPool, withPg } from "./support/services.js";

const DAY_MS = 86_400_000;
const clock = new FakeClock(Date.parse("2030-03-10T12:00:00Z"));
const TODAY = "tasks_p20300310";
const TOMORROW = "tasks_p20300311";
const BATCH = 256;
let db: TestDatabase;

beforeAll(async () => {
  db = await migratedDatabase(clock);
});

afterAll(async () => {
  await db?.drop();
});

/** The statement with one of its unestimated tests written plainly, as the planner could estimate it. */
const plainly = (test: string) => (sql: string) => {
  const hidden = `CASE WHEN ${test} THEN true ELSE false END`;
  expect(sql).toContain(hidden);
  return sql.replace(hidden, test);
};

/** The statement with its batch unnested in place, as the planner can count it. */
const unnested = (sql: string) => {
  const batch = /cf_(start|complete)_batch\(/;
  expect(sql).toMatch(batch);
  return sql.replace(batch, "unnest(");
};

/** `count` tasks of one day, run_at spread over its hours; workflow nodes if `workflowId` is given. */
async function insertTasks(c: pg.Client, dayStartMs: number, count: number, workflowId?: string) {
  await c.query(
    `INSERT INTO tasks (id, tenant_id, type, payload, priority, status, run_at, max_attempts,
                        timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
                        workflow_id, workflow_node, created_at, updated_at)
     SELECT gen_random_uuid(), gen_random_uuid(), 'noop', '{}', 'standard', 'ARMED',
            to_timestamp(($1 + i * (86399000.0 / $2)) / 1000.0), 3, 30000, 'exponential', 1000,
            60000, $3::uuid, CASE WHEN $3::uuid IS NULL THEN NULL ELSE 'n' || i END, now(), now()
       FROM generate_series(0, $2 - 1) AS i`,
    [dayStartMs, count, workflowId ?? null],
  );
}

/** The plan of a batch statement over `BATCH` of the day's tasks (its arrays as the worker sends them). */
async function planOf(
  c: pg.Client,
  statement: "start" | "complete",
  dayStartMs: number,
  rewrite: (sql: string) => string = (sql) => sql,
) {
  const { rows } = await c.query(
    `SELECT id, tenant_id, fencing_token, extract(epoch FROM run_at) * 1000 AS run_at_ms
       FROM tasks WHERE run_at >= $1 AND run_at < $2 LIMIT ${BATCH}`,
    [new Date(dayStartMs).toISOString(), new Date(dayStartMs + DAY_MS).toISOString()],
  );
  const nowMs = dayStartMs + DAY_MS;
  const common = [
    rows.map((r) => r.tenant_id),
    rows.map((r) => r.id),
    rows.map((r) => r.fencing_token ?? "0"),
    rows.map((r) => Number(r.run_at_ms)),
  ];
  const bounds = [new Date(dayStartMs).toISOString(), new Date(dayStartMs + DAY_MS).toISOString()];
  const params =
    statement === "start"
      ? [...common, "worker-1", rows.map(() => nowMs), 30_000, ...bounds, rows.map(() => nowMs)]
      : [...common, rows.map(() => "null"), rows.map(() => nowMs), ...bounds];
  const sql = statement === "start" ? START_MANY : COMPLETE_MANY_OUTSIDE_WORKFLOWS;
  const explained = await c.query(`EXPLAIN (FORMAT JSON) ${rewrite(sql)}`, params);
  return explained.rows[0]["QUERY PLAN"][0].Plan;
}

// biome-ignore lint/suspicious/noExplicitAny: an EXPLAIN (FORMAT JSON) node
type PlanNode = any;

/** Whether the update probes the partition once per row of the batch: a nested loop, the batch outside. */
function probesPerRow(plan: PlanNode): boolean {
  const join = plan.Plans?.[0];
  if (join?.["Node Type"] !== "Nested Loop") return false;
  const [outer, inner] = join.Plans;
  return outer["Node Type"] === "Function Scan" && /Index Scan/.test(inner["Node Type"]);
}

describe("task partition statistics", () => {
  it("analyzes the current days' partitions that have rows and nothing to estimate run_at with", async () => {
    const pool = testPool(db.url, "partition-statistics");
    try {
      await withPg(db.url, async (c) => {
        await insertTasks(c, Date.parse("2030-03-10T00:00:00Z"), 500);
        await insertTasks(c, Date.parse("2030-03-11T00:00:00Z"), 1);
      });
      // Yesterday's partition is empty: nothing to analyze there.
      expect((await analyzeHotTaskPartitions(pool, clock.nowMs())).sort()).toEqual([
        TODAY,
        TOMORROW,
      ]);
      // Today's has a histogram now. One row gives none, so tomorrow's is analyzed again.
      expect(await analyzeHotTaskPartitions(pool, clock.nowMs())).toEqual([TOMORROW]);
      await withPg(db.url, (c) => insertTasks(c, Date.parse("2030-03-11T00:00:00Z"), 10));
      expect(await analyzeHotTaskPartitions(pool, clock.nowMs())).toEqual([TOMORROW]);
      expect(await analyzeHotTaskPartitions(pool, clock.nowMs())).toEqual([]);
      // Days further off are not looked at.
      clock.advance(3 * DAY_MS);
      expect(await analyzeHotTaskPartitions(pool, clock.nowMs())).toEqual([]);
    } finally {
      await pool.end();
    }
  });

  it("the batched start and completion probe one row each, with the partition's statistics or without", async () => {
    const dayStartMs = Date.parse("2030-03-16T00:00:00Z");
    const pool = testPool(db.url, "partition-statistics");
    try {
      await withPg(db.url, async (c) => {
        await insertTasks(c, dayStartMs, 20_000);
        expect(probesPerRow(await planOf(c, "start", dayStartMs))).toBe(true);
        expect(probesPerRow(await planOf(c, "complete", dayStartMs))).toBe(true);
        // Counted, the batch meets the day's range at its default estimate (0.5 % of the
        // partition): the day's rows, each joined with the batch.
        expect(probesPerRow(await planOf(c, "start", dayStartMs, unnested))).toBe(false);
        expect(probesPerRow(await planOf(c, "complete", dayStartMs, unnested))).toBe(false);
      });
      expect(await analyzeHotTaskPartitions(pool, dayStartMs + DAY_MS / 2)).toEqual([
        "tasks_p20300316",
      ]);
      await withPg(db.url, async (c) => {
        expect(probesPerRow(await planOf(c, "start", dayStartMs))).toBe(true);
        expect(probesPerRow(await planOf(c, "complete", dayStartMs))).toBe(true);
        expect(probesPerRow(await planOf(c, "start", dayStartMs, unnested))).toBe(true);
        // The day's tasks are all ahead of the database's clock (2030): estimated, the
        // start's "due by now" would leave no rows, and the day would be read again.
        const dueEstimated = (sql: string) => plainly("t.run_at <= now()")(unnested(sql));
        expect(probesPerRow(await planOf(c, "start", dayStartMs, dueEstimated))).toBe(false);
        expect(
          probesPerRow(await planOf(c, "start", dayStartMs, plainly("t.run_at <= now()"))),
        ).toBe(true);
      });
    } finally {
      await pool.end();
    }
  });

  it("a partition analyzed while it held workflow nodes only still gets probes for tasks of no workflow", async () => {
    const dayStartMs = Date.parse("2030-03-17T00:00:00Z");
    const pool = testPool(db.url, "partition-statistics");
    try {
      await withPg(db.url, (c) => insertTasks(c, dayStartMs, 20_000, randomUUID()));
      await analyzeHotTaskPartitions(pool, dayStartMs + DAY_MS / 2);
      await withPg(db.url, async (c) => {
        expect(probesPerRow(await planOf(c, "complete", dayStartMs))).toBe(true);
        const plain = plainly("t.workflow_id IS NULL");
        expect(probesPerRow(await planOf(c, "complete", dayStartMs, plain))).toBe(true);
        const estimated = (sql: string) => plain(unnested(sql));
        expect(probesPerRow(await planOf(c, "complete", dayStartMs, estimated))).toBe(false);
      });
    } finally {
      await pool.end();
    }
  });
});
