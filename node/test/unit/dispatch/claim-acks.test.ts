/** The claims of published tasks wait for the next round; a pile past the limit leaves on its own. */
import { describe, expect, it } from "vitest";
import { ClaimAcks } from "../../../src/app/dispatch/claim-acks.js";
import type { DispatchHotTier } from "../../../src/ports/dispatch-hot-tier.js";
import type { Claim } from "../../../src/ports/dispatch-store.js";

function harness(maxPending = 2000, fail = false) {
  const sent: Array<[number, string[]]> = [];
  const errors: string[] = [];
  const hotTier = {
    ack: async (byShard: ReadonlyMap<number, readonly Claim[]>) => {
      if (fail) throw new Error("redis away");
      for (const [shard, claims] of byShard) sent.push([shard, claims.map((c) => c.taskId)]);
    },
  } as unknown as DispatchHotTier;
  const acks = new ClaimAcks(hotTier, (_e, what) => errors.push(what), maxPending);
  return { acks, sent, errors };
}

const claim = (taskId: string): Claim => ({ taskId, runAtMs: 1 });
const idsOf = (taken: Map<number, Claim[]>) =>
  [...taken].map(([shard, claims]) => [shard, claims.map((c) => c.taskId)]);

describe("claim acks", () => {
  it("hands the held shards' claims to the next round and drops those of shards no longer held", () => {
    const { acks, sent } = harness();
    acks.add(1, claim("a"));
    acks.add(2, claim("b"));
    acks.add(1, claim("c"));
    expect(idsOf(acks.take((shard) => shard === 1))).toEqual([[1, ["a", "c"]]]);
    expect(acks.size).toBe(0);
    expect(idsOf(acks.take(() => true))).toEqual([]);
    expect(sent).toEqual([]);
  });

  it("keeps what a failed round took for a later one", () => {
    const { acks } = harness();
    acks.add(1, claim("a"));
    acks.restore(acks.take(() => true));
    expect(idsOf(acks.take(() => true))).toEqual([[1, ["a"]]]);
  });

  it("sends a pile that reaches the limit on its own, and reports a failed send", async () => {
    const { acks, sent } = harness(3);
    acks.add(1, claim("a"));
    acks.add(2, claim("b"));
    expect(sent).toEqual([]);
    acks.add(1, claim("c"));
    await Promise.resolve();
    expect(sent).toEqual([
      [1, ["a", "c"]],
      [2, ["b"]],
    ]);
    expect(acks.size).toBe(0);
    const failing = harness(1, true);
    failing.acks.add(1, claim("a"));
    await new Promise((resolve) => setImmediate(resolve));
    expect(failing.errors).toEqual(["ack"]);
  });
});
