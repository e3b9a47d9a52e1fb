/**
 * The claims of published tasks wait for the next round, are sent only while
 * their shard dispatcher still holds its lease, survive a failed send, and a
 * pile past the limit leaves on its own.
 */
import { describe, expect, it } from "vitest";
import { ClaimAcks, type ClaimOwner } from "../../../src/app/dispatch/claim-acks.js";
import type { DispatchHotTier } from "../../../src/ports/dispatch-hot-tier.js";
import type { Claim } from "../../../src/ports/dispatch-store.js";

function harness(maxPending = 2000) {
  const sent: Array<[number, string[]]> = [];
  const errors: string[] = [];
  const redis = { up: true };
  const hotTier = {
    ack: async (byShard: ReadonlyMap<number, readonly Claim[]>) => {
      if (!redis.up) throw new Error("redis away");
      for (const [shard, claims] of byShard) sent.push([shard, claims.map((c) => c.taskId)]);
    },
  } as unknown as DispatchHotTier;
  const acks = new ClaimAcks(hotTier, (_e, what) => errors.push(what), maxPending);
  return { acks, sent, errors, redis };
}

const claim = (taskId: string): Claim => ({ taskId, runAtMs: 1 });
const owner = (shard: number, epoch: number, holds = { now: true }): ClaimOwner => ({
  shard,
  epoch,
  stillHolds: () => holds.now,
});

describe("claim acks", () => {
  it("sends nothing until flushed, then one ack of every shard whose dispatcher still holds its lease", async () => {
    const { acks, sent } = harness();
    const lost = { now: true };
    acks.add(owner(1, 7), claim("a"));
    acks.add(owner(2, 7, lost), claim("b"));
    acks.add(owner(1, 7), claim("c"));
    acks.add(owner(1, 8), claim("d")); // the same shard under a later epoch
    expect(sent).toEqual([]);
    lost.now = false;
    await acks.flush();
    expect(sent).toEqual([[1, ["a", "c", "d"]]]);
    expect(acks.size).toBe(0);
    await acks.flush();
    expect(sent).toHaveLength(1);
  });

  it("keeps what a failed send took for the next flush, and reports it", async () => {
    const { acks, sent, errors, redis } = harness(2);
    redis.up = false;
    acks.add(owner(1, 7), claim("a"));
    await acks.flush();
    expect(errors).toEqual(["ack"]);
    expect(acks.size).toBe(1);
    redis.up = true;
    await acks.flush();
    expect(sent).toEqual([[1, ["a"]]]);
  });

  it("sends a pile that reaches the limit on its own, still only of held leases", async () => {
    const { acks, sent } = harness(3);
    const lost = { now: false };
    acks.add(owner(1, 7), claim("a"));
    acks.add(owner(2, 7, lost), claim("b"));
    expect(sent).toEqual([]);
    acks.add(owner(1, 7), claim("c"));
    await Promise.resolve();
    expect(sent).toEqual([[1, ["a", "c"]]]);
    expect(acks.size).toBe(0);
  });
});
