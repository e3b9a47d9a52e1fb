/** The workflow graph's layout (ui/src/dag/layout.ts): levels, order, and 10,000 nodes. */
import { describe, expect, it } from "vitest";
import { crossings, layoutDag } from "../../../../ui/src/dag/layout.js";

describe("DAG layout", () => {
  it("puts each node one level after its deepest parent, so every edge points forward", () => {
    const layout = layoutDag([
      { key: "a", dependsOn: [] },
      { key: "b", dependsOn: ["a"] },
      { key: "c", dependsOn: ["a"] },
      { key: "d", dependsOn: ["b", "c"] },
      { key: "e", dependsOn: ["a", "d"] },
      { key: "lonely", dependsOn: ["nobody"] },
    ]);
    expect([...layout.level]).toEqual([0, 1, 1, 2, 3, 0]);
    for (const [p, c] of layout.edges) expect(layout.level[c]!).toBeGreaterThan(layout.level[p]!);
    expect(layout.levels.flat().sort()).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("orders a level by its parents' positions, which removes the crossings of two chains", () => {
    // Submitted crosswise: a1 → b2 and a2 → b1 cross in submission order.
    const nodes = [
      { key: "a1", dependsOn: [] },
      { key: "a2", dependsOn: [] },
      { key: "b1", dependsOn: ["a2"] },
      { key: "b2", dependsOn: ["a1"] },
      { key: "c1", dependsOn: ["b1"] },
      { key: "c2", dependsOn: ["b2"] },
    ];
    expect(crossings(layoutDag(nodes, 0))).toBeGreaterThan(0);
    expect(crossings(layoutDag(nodes))).toBe(0);
  });

  it("lays out a 10,000-node fan-out and fan-in: three levels, the wide one in order", () => {
    const middles = Array.from({ length: 9998 }, (_, i) => `m${i}`);
    const layout = layoutDag([
      { key: "root", dependsOn: [] },
      ...middles.map((key) => ({ key, dependsOn: ["root"] })),
      { key: "sink", dependsOn: middles },
    ]);
    expect(layout.levels.map((l) => l.length)).toEqual([1, 9998, 1]);
    expect(layout.edges).toHaveLength(2 * 9998);
    const rows = layout.levels[1]!.map((node) => layout.row[node]);
    expect(rows).toEqual(rows.map((_, i) => i));
  });

  it("survives a cycle (which the API refuses) by putting its nodes last", () => {
    const layout = layoutDag([
      { key: "a", dependsOn: [] },
      { key: "x", dependsOn: ["y"] },
      { key: "y", dependsOn: ["x"] },
    ]);
    expect([...layout.level]).toEqual([0, 1, 1]);
  });
});
