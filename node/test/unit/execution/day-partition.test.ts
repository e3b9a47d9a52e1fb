/**
 * Where onDayPartition sends a batch: its one day's partition under a
 * prepared name, built once per day, or `tasks`. The statements themselves
 * run on the real Postgres in integration/prepared-arm.test.ts and the worker's suites.
 */
import { describe, expect, it } from "vitest";
import {
  type DayPartitionStatement,
  onDayPartition,
} from "../../../src/adapters/pg/day-partition.js";

const DAY_MS = 86_400_000;
const DEC_7 = Date.UTC(2026, 11, 7);

/** A statement that counts how often its partition form is built. */
function statement(): DayPartitionStatement & { built: string[] } {
  const built: string[] = [];
  return {
    built,
    onTasks: "UPDATE tasks",
    on: (partition) => {
      built.push(partition);
      return `UPDATE ${partition}`;
    },
    name: "cf_test",
  };
}

/** A Queryable that records what it was asked and answers (or refuses) as told. */
function db(refuse?: (text: string) => { code: string } | undefined) {
  const asked: Array<{ name?: string; text: string }> = [];
  return {
    asked,
    query: async (config: string | { name?: string; text: string }) => {
      const q = typeof config === "string" ? { text: config } : config;
      asked.push({ name: q.name, text: q.text });
      const refusal = refuse?.(q.text);
      if (refusal) throw Object.assign(new Error("refused"), refusal);
      return { rows: [] };
    },
  };
}

// biome-ignore lint/suspicious/noExplicitAny: the fake answers only what onDayPartition calls
const asQueryable = (fake: ReturnType<typeof db>) => fake as any;

describe("onDayPartition", () => {
  it("runs a batch of one day on its partition, and builds that form once per day", async () => {
    const s = statement();
    const d = db();
    for (let i = 0; i < 3; i++) {
      await onDayPartition(asQueryable(d), s, [{ runAtMs: DEC_7 + i }, { runAtMs: DEC_7 + 5 }], []);
    }
    await onDayPartition(asQueryable(d), s, [{ runAtMs: DEC_7 + DAY_MS }], []);
    expect(d.asked.map((q) => q.name)).toEqual([
      "cf_test_20261207",
      "cf_test_20261207",
      "cf_test_20261207",
      "cf_test_20261208",
    ]);
    expect(d.asked[0]!.text).toBe("UPDATE tasks_p20261207");
    expect(s.built).toEqual(["tasks_p20261207", "tasks_p20261208"]);
  });

  it("runs a batch across midnight on tasks", async () => {
    const d = db();
    await onDayPartition(
      asQueryable(d),
      statement(),
      [{ runAtMs: DEC_7 + DAY_MS - 1 }, { runAtMs: DEC_7 + DAY_MS }],
      [],
    );
    expect(d.asked).toEqual([{ name: undefined, text: "UPDATE tasks" }]);
  });

  it("runs a batch beyond the year 9999 on tasks: no partition's name holds it", async () => {
    const d = db();
    await onDayPartition(asQueryable(d), statement(), [{ runAtMs: Date.UTC(10_000, 0, 2) }], []);
    expect(d.asked).toEqual([{ name: undefined, text: "UPDATE tasks" }]);
  });

  it("falls back to tasks when the partition is gone or not granted, and only then", async () => {
    for (const code of ["42P01", "42501"]) {
      const d = db((text) => (text === "UPDATE tasks" ? undefined : { code }));
      await onDayPartition(asQueryable(d), statement(), [{ runAtMs: DEC_7 }], []);
      expect(d.asked.map((q) => q.text)).toEqual(["UPDATE tasks_p20261207", "UPDATE tasks"]);
    }
    const d = db(() => ({ code: "23505" }));
    await expect(
      onDayPartition(asQueryable(d), statement(), [{ runAtMs: DEC_7 }], []),
    ).rejects.toMatchObject({ code: "23505" });
    expect(d.asked).toHaveLength(1);
  });

  it("keeps a bounded number of days per statement", async () => {
    const s = statement();
    const d = db();
    for (let day = 0; day < 40; day++) {
      await onDayPartition(asQueryable(d), s, [{ runAtMs: DEC_7 + day * DAY_MS }], []);
    }
    await onDayPartition(asQueryable(d), s, [{ runAtMs: DEC_7 }], []);
    // Day 0 was dropped along the way, so its form is built again: still the same statement.
    expect(s.built.filter((p) => p === "tasks_p20261207")).toHaveLength(2);
    expect(d.asked.at(-1)).toEqual({ name: "cf_test_20261207", text: "UPDATE tasks_p20261207" });
  });
});
