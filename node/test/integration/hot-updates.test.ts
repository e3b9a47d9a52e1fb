/**
 * The arm and the start are HOT updates (migrations/000020_hot_updates.sql):
 * the statements the dispatcher and the worker send, run over a batch of
 * tasks that share pages, write no index entry for nearly all of them. The
 * completion takes its row out of the unfinished index, so it is the one
 * update that is never HOT. Counted by the transaction's own statistics
 * (pg_stat_get_xact_*).
 */
import { randomUUID } from "node:crypto";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ARM_TASKS } from "../../src/adapters/pg/sql/dispatch.js";
import {
  COMPLETE_MANY_OUTSIDE_WORKFLOWS,
  START_MANY,
} from "../../src/adapters/pg/sql/execution.js";
import { startTenantFixture, type TenantFixture } from "./support/api.js";
import { withPg } from "./support/services.js";

const TASKS = 60;
const DAY_MS = 86_400_000;
let fixture: TenantFixture;

beforeAll(async () => {
  fixture = await startTenantFixture();
});

afterAll(async () => {
  await fixture?.db.drop();
});

const dayBounds = (ms: number) => {
  const day = Math.floor(ms / DAY_MS) * DAY_MS;
  return [new Date(day).toISOString(), new Date(day + DAY_MS).toISOString()];
};

/**
 * Runs `step` in its own transaction; answers what it updated in
 * `partition`. The transaction's counters also hold what earlier
 * transactions of this connection did and the server has not yet collected,
 * so the step's own are the difference.
 */
async function counted(c: pg.Client, partition: string, step: () => Promise<void>) {
  const read = async () =>
    (
      await c.query(
        `SELECT pg_stat_get_xact_tuples_updated($1::regclass)::int AS updated,
                pg_stat_get_xact_tuples_hot_updated($1::regclass)::int AS hot`,
        [partition],
      )
    ).rows[0] as { updated: number; hot: number };
  await c.query("BEGIN");
  try {
    const before = await read();
    await step();
    const after = await read();
    await c.query("COMMIT");
    return { updated: after.updated - before.updated, hot: after.hot - before.hot };
  } catch (error) {
    await c.query("ROLLBACK");
    throw error;
  }
}

describe("HOT updates", () => {
  it("arm and start write no index entry; the completion is the one update that does", async () => {
    await withPg(fixture.db.url, async (c) => {
      const nowMs = Date.now();
      const runAtMs = nowMs - 1000;
      const ids = Array.from({ length: TASKS }, () => randomUUID());
      const partition = `tasks_p${new Date(runAtMs).toISOString().slice(0, 10).replaceAll("-", "")}`;
      const tenants = ids.map(() => fixture.tenant.id);
      // One batch of tasks due at the same instant: they share pages and are armed together.
      await c.query(
        `INSERT INTO tasks (id, tenant_id, hot_shard, type, payload, priority, status, run_at,
                            max_attempts, timeout_ms, backoff_strategy, backoff_base_ms,
                            backoff_max_ms, created_at, updated_at)
         SELECT id, $2, 0, 'noop', '{}', 'standard', 'SCHEDULED', to_timestamp($3 / 1000.0), 3,
                30000, 'exponential', 1000, 60000, now(), now()
           FROM unnest($1::uuid[]) AS id`,
        [ids, fixture.tenant.id, runAtMs],
      );
      await c.query(
        "INSERT INTO leases (name, owner, epoch, expires_at) VALUES ('hot-test', 'me', 1, now() + interval '1 hour')",
      );

      let tokens: string[] = [];
      const arm = await counted(c, partition, async () => {
        const armed = await c.query(ARM_TASKS, [
          [0],
          ["hot-test"],
          ["me"],
          [1],
          nowMs,
          ids,
          ids.map(() => runAtMs),
          ids.map(() => 0),
          new Date(runAtMs).toISOString(),
          new Date(runAtMs).toISOString(),
        ]);
        expect(armed.rows).toHaveLength(TASKS);
        tokens = armed.rows.map((r) => r.fencing_token as string);
      });
      const start = await counted(c, partition, async () => {
        const started = await c.query(START_MANY, [
          tenants,
          ids,
          tokens,
          ids.map(() => runAtMs),
          "worker-1",
          ids.map(() => nowMs),
          30_000,
          ...dayBounds(runAtMs),
          ids.map(() => nowMs),
        ]);
        expect(started.rows).toHaveLength(TASKS);
      });
      const complete = await counted(c, partition, async () => {
        const completed = await c.query(COMPLETE_MANY_OUTSIDE_WORKFLOWS, [
          tenants,
          ids,
          tokens,
          ids.map(() => runAtMs),
          ids.map(() => "null"),
          ids.map(() => nowMs + 10),
          ...dayBounds(runAtMs),
        ]);
        expect(completed.rows).toHaveLength(TASKS);
      });
      // The worst case for room on a page: small rows, inserted, armed and started together,
      // each version larger than the last. At fillfactor 50 about 90 % of the arms and 83 %
      // of the starts fit beside their old version (all of them at 35); without the
      // migration, none.
      expect(arm.updated).toBe(TASKS);
      expect(arm.hot).toBeGreaterThanOrEqual(0.85 * TASKS);
      expect(start.updated).toBe(TASKS);
      expect(start.hot).toBeGreaterThanOrEqual(0.8 * TASKS);
      expect(complete).toEqual({ updated: TASKS, hot: 0 });
      const { rows } = await c.query(
        "SELECT count(*)::int AS n FROM tasks WHERE id = ANY ($1::uuid[]) AND NOT unfinished AND status = 'COMPLETED'",
        [ids],
      );
      expect(rows[0].n).toBe(TASKS);
    });
  });
});
