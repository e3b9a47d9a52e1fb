import { describe, expect, it } from "vitest";
import { planShards, type ShardView, targetShareOf } from "../../../src/domain/fair-share.js";

const views = (owners: Array<string | null>): ShardView[] =>
  owners.map((liveOwner, shard) => ({ shard, liveOwner }));

describe("fair share of 16 shards", () => {
  it("gives every live node its share; the shares add up to 16", () => {
    for (let n = 1; n <= 20; n++) {
      const nodes = Array.from({ length: n }, (_, i) => `node-${String(i).padStart(2, "0")}`);
      const shares = nodes.map((me) => targetShareOf(me, nodes, 16));
      expect(shares.reduce((a, b) => a + b, 0)).toBe(16);
      expect(Math.max(...shares) - Math.min(...shares)).toBeLessThanOrEqual(1);
    }
  });

  it("counts itself even before its membership lease shows up", () => {
    expect(targetShareOf("b", ["a"], 16)).toBe(8);
  });

  it("releases its highest shards beyond its share, acquires free ones lowest first", () => {
    const allMine = views(Array(16).fill("a"));
    expect(planShards("a", ["a", "b"], allMine)).toEqual({
      acquire: [],
      release: [15, 14, 13, 12, 11, 10, 9, 8],
      target: 8,
    });
    const half = views([...Array(8).fill("a"), ...Array(8).fill(null)]);
    expect(planShards("b", ["a", "b"], half)).toEqual({
      acquire: [8, 9, 10, 11, 12, 13, 14, 15],
      release: [],
      target: 8,
    });
  });

  it("takes only free or expired shards, never a live one of another node", () => {
    const plan = planShards("c", ["a", "b", "c"], views([...Array(15).fill("a"), null]));
    expect(plan.acquire).toEqual([15]);
  });

  it("converges from any start, one heartbeat per node per round", () => {
    const nodes = ["n1", "n2", "n3"];
    let owners: Array<string | null> = Array(16).fill("n1");
    for (let round = 0; round < 4; round++) {
      for (const me of nodes) {
        const plan = planShards(me, nodes, views(owners));
        owners = owners.map((o, s) => (plan.release.includes(s) ? null : o));
        for (const s of plan.acquire) owners[s] = me;
      }
    }
    const counts = nodes.map((n) => owners.filter((o) => o === n).length).sort();
    expect(counts).toEqual([5, 5, 6]);
    expect(owners.every((o) => o !== null)).toBe(true);
  });
});
