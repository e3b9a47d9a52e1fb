/**
 * The contract of the hot tier (ports/hot-tier.ts, ports/dispatch-hot-tier.ts,
 * ports/cancel-notifier.ts), as the Redis adapter and its Lua scripts
 * (adapters/redis/scripts/*.lua) define it: one suite, run against every
 * adapter (hot-tier.test.ts). It sees only the ports; every time is an
 * argument, so nothing here waits.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CancelNotifier } from "../../src/ports/cancel-notifier.js";
import type { DispatchHotTier } from "../../src/ports/dispatch-hot-tier.js";
import type { DueEntry, HotTier } from "../../src/ports/hot-tier.js";
import { taskIdInShard } from "../support/task-ids.js";

export interface HotTierSubject {
  /** The API's, planner's and worker's view. */
  hot: HotTier;
  /** The dispatch roles' view of the same store. */
  dispatch: DispatchHotTier & CancelNotifier;
  /**
   * Whether a shard's content epoch stays put while nothing is lost (Redis),
   * or is the caller's candidate every time (a tier in one process's memory,
   * which other processes' adds never reach: see contentEpochs).
   */
  vouchesForContents: boolean;
  cleanup(): Promise<void>;
}

const TENANT = "0190f0a0-0000-7000-8000-000000000001";
const NOW_MS = 1_800_000_000_000;
const TTL_MS = 60_000;

const entry = (shard: number, runAtMs: number): DueEntry => ({
  tenantId: TENANT,
  taskId: taskIdInShard(TENANT, shard),
  runAtMs,
});

export function hotTierContract(name: string, open: () => Promise<HotTierSubject>): void {
  describe(`hot tier contract: ${name}`, () => {
    let subject: HotTierSubject;
    let dispatch: DispatchHotTier & CancelNotifier;
    beforeEach(async () => {
      subject = await open();
      dispatch = subject.dispatch;
    });
    afterEach(async () => {
      await subject?.cleanup();
    });

    /** Everything due in the shard, without changing it: claimed, then given back. */
    async function dueOf(shard: number): Promise<Array<[string, number]>> {
      const [batch] = await dispatch.claim([{ shard, limit: 2000 }], 0, Number.MAX_SAFE_INTEGER, 1);
      await dispatch.giveBack(shard, batch!.claims);
      return batch!.claims.map((c) => [c.taskId, c.runAtMs]);
    }

    it("answers one content epoch per shard, in order; a shard keeps its first unless the tier cannot vouch", async () => {
      expect(await dispatch.contentEpochs([4], "first")).toEqual(["first"]);
      const again = await dispatch.contentEpochs([4, 9], "second");
      expect(again).toEqual(
        subject.vouchesForContents ? ["first", "second"] : ["second", "second"],
      );
      expect(await dispatch.contentEpochs([], "third")).toEqual([]);
    });

    it("is connected and answers ping", async () => {
      expect(subject.hot.isConnected()).toBe(true);
      await expect(subject.hot.ping()).resolves.toBeUndefined();
    });

    it("claims what is due before now + lookahead, earliest first, ties by id, up to the limit", async () => {
      const a = entry(3, NOW_MS + 500);
      const b = entry(3, NOW_MS - 1000);
      const [c1, c2] = [entry(3, NOW_MS + 200), entry(3, NOW_MS + 200)].sort((x, y) =>
        x.taskId < y.taskId ? -1 : 1,
      );
      const later = entry(3, NOW_MS + 5000);
      await subject.hot.addDue([a, later, c2!, b, c1!]);
      const [first] = await dispatch.claim([{ shard: 3, limit: 3 }], NOW_MS, 2000, TTL_MS);
      expect(first!.claims).toEqual([
        { taskId: b.taskId, runAtMs: b.runAtMs },
        { taskId: c1!.taskId, runAtMs: c1!.runAtMs },
        { taskId: c2!.taskId, runAtMs: c2!.runAtMs },
      ]);
      const [second] = await dispatch.claim([{ shard: 3, limit: 10 }], NOW_MS, 2000, TTL_MS);
      expect(second!.claims).toEqual([{ taskId: a.taskId, runAtMs: a.runAtMs }]);
      expect(await dueOf(3)).toEqual([[later.taskId, later.runAtMs]]);
    });

    it("claims per shard in one call, one batch per request in order, other shards untouched", async () => {
      const [x, y, z] = [entry(1, NOW_MS), entry(2, NOW_MS), entry(5, NOW_MS)];
      await subject.hot.addDue([x, y, z]);
      const batches = await dispatch.claim(
        [
          { shard: 2, limit: 10 },
          { shard: 1, limit: 10 },
        ],
        NOW_MS,
        0,
        TTL_MS,
      );
      expect(batches.map((b) => b.claims.map((c) => c.taskId))).toEqual([[y.taskId], [x.taskId]]);
      expect(await dueOf(5)).toEqual([[z.taskId, z.runAtMs]]);
    });

    it("adds idempotently; adding again moves an id to its new run_at", async () => {
      const e = entry(4, NOW_MS + 100);
      await subject.hot.addDue([e]);
      await dispatch.addDue([e]);
      expect(await dueOf(4)).toEqual([[e.taskId, e.runAtMs]]);
      await subject.hot.addDue([{ ...e, runAtMs: NOW_MS + 9000 }]);
      expect(await dueOf(4)).toEqual([[e.taskId, NOW_MS + 9000]]);
    });

    it("gives back only claims still held, with their run_at; an acked claim is gone", async () => {
      const [p, q] = [entry(6, NOW_MS), entry(6, NOW_MS + 1)];
      await subject.hot.addDue([p, q]);
      const [batch] = await dispatch.claim([{ shard: 6, limit: 10 }], NOW_MS, 10, TTL_MS);
      expect(batch!.claims).toHaveLength(2);
      const [claimP, claimQ] = batch!.claims;
      // Claimed ids are not claimed again.
      const [again] = await dispatch.claim([{ shard: 6, limit: 10 }], NOW_MS, 10, TTL_MS);
      expect(again!.claims).toEqual([]);
      await dispatch.ack(new Map([[6, [claimQ!]]]));
      expect(await dispatch.giveBack(6, [claimP!, claimQ!])).toBe(1);
      expect(await dispatch.giveBack(6, [claimP!])).toBe(0);
      expect(await dueOf(6)).toEqual([[p.taskId, p.runAtMs]]);
      expect(await dispatch.returnExpired(6, null, 100)).toBe(0);
    });

    it("returns claims whose expiry has passed, up to the limit; null returns all", async () => {
      const entries = [entry(7, NOW_MS), entry(7, NOW_MS + 1), entry(7, NOW_MS + 2)];
      await subject.hot.addDue(entries);
      await dispatch.claim([{ shard: 7, limit: 1 }], NOW_MS, 10, 1000); // expires at NOW + 1000
      await dispatch.claim([{ shard: 7, limit: 2 }], NOW_MS + 500, 10, 1000); // at NOW + 1500
      expect(await dispatch.returnExpired(7, NOW_MS + 999, 100)).toBe(0);
      expect(await dispatch.returnExpired(7, NOW_MS + 1000, 100)).toBe(1);
      expect(await dueOf(7)).toEqual([[entries[0]!.taskId, NOW_MS]]);
      expect(await dispatch.returnExpired(7, NOW_MS + 1500, 1)).toBe(1);
      expect(await dispatch.returnExpired(7, null, 100)).toBe(1);
      expect((await dueOf(7)).map(([id]) => id)).toEqual(entries.map((e) => e.taskId));
    });

    it("rehydrates only what is in neither due nor claimed, and counts it; twice adds nothing", async () => {
      const [inDue, claimed, lost] = [entry(8, NOW_MS), entry(8, NOW_MS - 1), entry(8, NOW_MS + 1)];
      await subject.hot.addDue([claimed]);
      await dispatch.claim([{ shard: 8, limit: 1 }], NOW_MS, 0, TTL_MS);
      await subject.hot.addDue([inDue]);
      expect(await dispatch.rehydrate([inDue, claimed, lost])).toBe(1);
      expect(await dispatch.rehydrate([inDue, claimed, lost])).toBe(0);
      expect(await dueOf(8)).toEqual([
        [inDue.taskId, inDue.runAtMs],
        [lost.taskId, lost.runAtMs],
      ]);
    });

    it("after thousands of adds, moves and cancels, claims exactly the live ids in order", async () => {
      const live = new Map<string, number>();
      const entries = Array.from({ length: 1500 }, (_, i) => entry(10, NOW_MS + i));
      await subject.hot.addDue(entries);
      for (const round of [1, 2]) {
        const moved = entries.map((e, i) => ({
          ...e,
          runAtMs: NOW_MS + ((i * 7919 * round) % 3000),
        }));
        await subject.hot.addDue(moved);
        for (const e of moved) live.set(e.taskId, e.runAtMs);
      }
      for (const e of entries.slice(0, 100)) {
        await dispatch.cancelled(TENANT, e.taskId);
        live.delete(e.taskId);
      }
      const expected = [...live]
        .sort(([a, x], [b, y]) => x - y || (a < b ? -1 : 1))
        .map(([taskId, runAtMs]) => ({ taskId, runAtMs }));
      const claimed = [];
      for (let round = 0; round < 2; round++) {
        const [batch] = await dispatch.claim(
          [{ shard: 10, limit: 1000 }],
          NOW_MS + 3000,
          0,
          TTL_MS,
        );
        claimed.push(...batch!.claims);
      }
      expect(claimed).toEqual(expected);
    });

    it("a cancel takes the id out of due and reaches the shard's next claim once", async () => {
      const [kept, cancelled] = [entry(9, NOW_MS), entry(9, NOW_MS)];
      await subject.hot.addDue([kept, cancelled]);
      await dispatch.cancelled(TENANT, cancelled.taskId);
      const [first] = await dispatch.claim([{ shard: 9, limit: 10 }], NOW_MS, 0, TTL_MS);
      expect(first!.claims.map((c) => c.taskId)).toEqual([kept.taskId]);
      expect(first!.cancelled).toEqual([cancelled.taskId]);
      const [second] = await dispatch.claim([{ shard: 9, limit: 10 }], NOW_MS, 0, TTL_MS);
      expect(second!.cancelled).toEqual([]);
    });
  });
}
