/**
 * The pre-loader's incremental sweeps (app/dispatch/preloader.ts), on a
 * store that answers scheduledBefore from a list and a hot tier whose
 * content epochs the test controls: a sweep reads the whole window of a
 * shard the first time and after the shard may have lost entries (its epoch
 * changed, the last sweep failed, the lease came back), and otherwise only
 * the tasks that entered the window since and those of the last REREAD_MS
 * it covered (one committed after the sweep that read past it).
 */
import { describe, expect, it } from "vitest";
import { Preloader, REREAD_MS } from "../../../src/app/dispatch/preloader.js";
import type { DispatchHotTier } from "../../../src/ports/dispatch-hot-tier.js";
import { noDispatchMetrics } from "../../../src/ports/dispatch-metrics.js";
import type {
  DispatchStore,
  ScheduledEntry,
  ShardCursor,
} from "../../../src/ports/dispatch-store.js";
import type { DueEntry } from "../../../src/ports/hot-tier.js";
import { FakeClock } from "../../support/fake-clock.js";

const T0 = 1_800_000_000_000;
const WINDOW_MS = 3_600_000;
const TENANT = "0190f0a0-0000-7000-8000-000000000001";

const task = (shard: number, n: number, runAtMs: number): ScheduledEntry => ({
  shard,
  taskId: `0190f0a0-0000-7000-8000-${String(n).padStart(12, "0")}`,
  tenantId: TENANT,
  runAtMs,
});

const after = (e: ScheduledEntry, c: ShardCursor["after"]) =>
  c === null || e.runAtMs > c.runAtMs || (e.runAtMs === c.runAtMs && e.taskId > c.taskId);

function world(tasks: ScheduledEntry[]) {
  const epochs = new Map<number, string>();
  const added: DueEntry[] = [];
  let failAdds = false;
  const store = {
    async scheduledBefore(beforeMs: number, cursors: readonly ShardCursor[], limit: number) {
      return cursors.flatMap((c) =>
        tasks
          .filter((e) => e.shard === c.shard && e.runAtMs < beforeMs && after(e, c.after))
          .sort((a, b) => a.runAtMs - b.runAtMs || (a.taskId < b.taskId ? -1 : 1))
          .slice(0, limit),
      );
    },
  } as unknown as DispatchStore;
  const hotTier = {
    async contentEpochs(shards: readonly number[], candidate: string) {
      return shards.map((s) => {
        if (!epochs.has(s)) epochs.set(s, candidate);
        return epochs.get(s)!;
      });
    },
    async addDue(entries: readonly DueEntry[]) {
      if (failAdds) throw new Error("redis unavailable");
      added.push(...entries);
    },
  } as unknown as DispatchHotTier;
  return {
    store,
    hotTier,
    added,
    loseShard: (shard: number) => epochs.delete(shard),
    failAdds: (fail: boolean) => {
      failAdds = fail;
    },
  };
}

function preloaderOver(
  w: ReturnType<typeof world>,
  clock: FakeClock,
  owned: Set<number>,
  hotWindowMs = WINDOW_MS,
) {
  return new Preloader(w.store, w.hotTier, clock, noDispatchMetrics, () => owned, {
    hotWindowMs,
    pageSize: 2,
  });
}

describe("the pre-loader", () => {
  it("reads a shard whole once, then only what entered the window and the last REREAD_MS it covered", async () => {
    const clock = new FakeClock(T0);
    const tasks = [
      task(1, 1, T0 - 5_000),
      task(1, 2, T0 + 10_000),
      task(1, 3, T0 + WINDOW_MS - REREAD_MS - 1), // covered, before the slice read again
      task(1, 4, T0 + WINDOW_MS - 1_000), // covered, inside it
      task(1, 5, T0 + WINDOW_MS), // exactly the first sweep's bound: not yet inside
      task(1, 6, T0 + WINDOW_MS + 500),
      task(1, 7, T0 + WINDOW_MS + 5_000),
    ];
    const w = world(tasks);
    const preloader = preloaderOver(w, clock, new Set([1]));

    expect(await preloader.sweep()).toBe(4);
    expect(await preloader.sweep()).toBe(1); // task 4 again
    clock.advance(1_000);
    expect(await preloader.sweep()).toBe(3); // 4 again, 5 and 6
    expect(new Set(w.added.map((e) => e.taskId))).toEqual(
      new Set(tasks.slice(0, 6).map((t) => t.taskId)),
    );
  });

  it("with a hot window of 0, loads a task that committed after the sweep that read past its run_at", async () => {
    const clock = new FakeClock(T0);
    const tasks = [task(1, 1, T0 - 1_000)];
    const w = world(tasks);
    const preloader = preloaderOver(w, clock, new Set([1]), 0);
    expect(await preloader.sweep()).toBe(1);
    // Due before that sweep's bound (T0), its transaction committed only after the sweep.
    tasks.push(task(1, 2, T0 - 10));
    clock.advance(300);
    expect(await preloader.sweep()).toBe(2); // 1 again (still SCHEDULED here) and 2
    expect(w.added.map((e) => e.taskId)).toContain(tasks[1]!.taskId);
  });

  it("reads a shard whole again when its epoch changed (a flush), and only that shard", async () => {
    const clock = new FakeClock(T0);
    const w = world([task(1, 1, T0 + 1_000), task(2, 2, T0 + 2_000), task(2, 3, T0 + 3_000)]);
    const preloader = preloaderOver(w, clock, new Set([1, 2]));
    expect(await preloader.sweep()).toBe(3);
    w.loseShard(2);
    expect(await preloader.sweep()).toBe(2);
    expect(await preloader.sweep()).toBe(0);
  });

  it("reads whole after a failed sweep", async () => {
    const clock = new FakeClock(T0);
    const w = world([task(1, 1, T0 + 1_000), task(1, 2, T0 + 2_000)]);
    const preloader = preloaderOver(w, clock, new Set([1]));
    expect(await preloader.sweep()).toBe(2);
    w.failAdds(true);
    await expect(preloader.sweep()).rejects.toThrow("redis unavailable");
    w.failAdds(false);
    expect(await preloader.sweep()).toBe(2);
  });

  it("reads a shard whole when its lease comes back, having swept without it meanwhile", async () => {
    const clock = new FakeClock(T0);
    const owned = new Set([1, 2]);
    const w = world([task(1, 1, T0 + 1_000), task(2, 2, T0 + 2_000)]);
    const preloader = preloaderOver(w, clock, owned);
    expect(await preloader.sweep()).toBe(2);
    owned.delete(2);
    expect(await preloader.sweep()).toBe(0);
    owned.add(2);
    expect(await preloader.sweep()).toBe(1);
  });

  it("covers no less when the clock steps back", async () => {
    const clock = new FakeClock(T0);
    const w = world([task(1, 1, T0 + WINDOW_MS - 1), task(1, 2, T0 + WINDOW_MS + 100)]);
    const preloader = preloaderOver(w, clock, new Set([1]));
    expect(await preloader.sweep()).toBe(1);
    clock.set(T0 - 30_000);
    expect(await preloader.sweep()).toBe(0);
    clock.set(T0 + 200);
    expect(await preloader.sweep()).toBe(2); // 2 entered; 1 is in the slice read again
  });
});
