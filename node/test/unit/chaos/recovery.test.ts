/** The recovery objectives' arithmetic: back to normal lateness, balanced shards, p50/max against a target. */
import { describe, expect, it } from "vitest";
import {
  balanced,
  normalThresholdMs,
  recoveryMs,
  summarize,
} from "../../../../bench/chaos/recovery.js";

/** One task due every 100 ms from `fromMs` to `toMs`, late by `lateness(dueMs)`. */
const tasks = (fromMs: number, toMs: number, lateness: (dueMs: number) => number) =>
  Array.from({ length: (toMs - fromMs) / 100 }, (_, i) => {
    const dueMs = fromMs + i * 100;
    return { dueMs, latenessMs: lateness(dueMs) };
  });

describe("recoveryMs", () => {
  it("is the first run_at after the fault from which a whole window is normal", () => {
    // Late by 8 s for tasks due in the 3 s after the fault at 10 000, then 50 ms.
    const samples = tasks(0, 30_000, (due) => (due >= 10_000 && due < 13_000 ? 8000 : 50));
    expect(recoveryMs(samples, 10_000, 1000, 5000)).toBe(3000);
  });

  it("does not take one good task inside a bad stretch for recovery", () => {
    const samples = tasks(0, 30_000, (due) =>
      due >= 10_000 && due < 16_000 && due !== 11_000 ? 8000 : 50,
    );
    expect(recoveryMs(samples, 10_000, 1000, 5000)).toBe(6000);
  });

  it("is null when lateness never came back within what was observed", () => {
    const samples = tasks(0, 20_000, (due) => (due >= 10_000 ? 8000 : 50));
    expect(recoveryMs(samples, 10_000, 1000, 5000)).toBeNull();
    // Normal only in a tail shorter than the window: not yet shown to be recovered.
    const tail = tasks(0, 20_000, (due) => (due >= 10_000 && due < 17_000 ? 8000 : 50));
    expect(recoveryMs(tail, 10_000, 1000, 5000)).toBeNull();
  });

  it("is 0 for a fault that made nothing late", () => {
    expect(
      recoveryMs(
        tasks(0, 30_000, () => 40),
        10_000,
        1000,
        5000,
      ),
    ).toBe(0);
  });
});

describe("normalThresholdMs", () => {
  it("is twice the p99 before the fault, at least the floor", () => {
    expect(normalThresholdMs(tasks(0, 10_000, () => 900))).toBe(1800);
    expect(normalThresholdMs(tasks(0, 10_000, () => 20))).toBe(1000);
    expect(normalThresholdMs([])).toBe(1000);
  });
});

describe("balanced", () => {
  const owners = (list: string[]) => new Map(list.map((owner, shard) => [shard, owner]));
  const target = (share: Record<string, number>) => (node: string) => share[node] ?? 0;
  it("holds when every shard has a live owner and each node its target", () => {
    const o = owners(["a", "a", "b", "c"]);
    expect(balanced(o, ["a", "b", "c"], 4, target({ a: 2, b: 1, c: 1 }))).toBe(true);
  });
  it("fails for a shard of a dead node, a missing shard, or a share off target", () => {
    expect(
      balanced(owners(["a", "a", "b", "d"]), ["a", "b", "c"], 4, target({ a: 2, b: 1, c: 1 })),
    ).toBe(false);
    expect(balanced(owners(["a", "a", "b"]), ["a", "b"], 4, target({ a: 2, b: 2 }))).toBe(false);
    expect(balanced(owners(["a", "a", "a", "b"]), ["a", "b"], 4, target({ a: 2, b: 2 }))).toBe(
      false,
    );
  });
});

describe("summarize", () => {
  it("gives p50 and max of the trials and whether every one met the target", () => {
    expect(summarize({ name: "x", targetMs: 30_000, samplesMs: [9000, 7000, 8000] })).toMatchObject(
      {
        trials: 3,
        unrecovered: 0,
        p50_ms: 8000,
        max_ms: 9000,
        meets_target: true,
      },
    );
    expect(summarize({ name: "x", targetMs: 30_000, samplesMs: [9000, null] }).meets_target).toBe(
      false,
    );
    expect(summarize({ name: "x", targetMs: 5000, samplesMs: [9000] }).meets_target).toBe(false);
    expect(summarize({ name: "x", targetMs: null, samplesMs: [1] }).meets_target).toBeNull();
  });
});
