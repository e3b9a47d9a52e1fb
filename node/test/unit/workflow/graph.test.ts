import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { describeCycle, type GraphNode, orderGraph } from "../../../src/domain/workflow-graph.js";
import { propertyParams } from "../../support/property.js";

const node = (key: string, ...dependsOn: string[]): GraphNode => ({ key, dependsOn });

/** Random graphs on n nodes: each node depends on a random subset of the others (cycles likely). */
const anyGraph = fc.integer({ min: 1, max: 12 }).chain((n) =>
  fc
    .array(fc.array(fc.integer({ min: 0, max: n - 1 }), { maxLength: 3 }), {
      minLength: n,
      maxLength: n,
    })
    .map((deps) =>
      deps.map((parents, i) =>
        node(`n${i}`, ...[...new Set(parents)].filter((p) => p !== i).map((p) => `n${p}`)),
      ),
    ),
);

/** Random DAGs: node i depends only on lower indices, listed in a shuffled order. */
const anyDag = fc.integer({ min: 1, max: 40 }).chain((n) =>
  fc
    .tuple(
      fc.array(fc.array(fc.nat(), { maxLength: 4 }), { minLength: n, maxLength: n }),
      fc.shuffledSubarray([...Array(n).keys()], { minLength: n, maxLength: n }),
    )
    .map(([deps, shuffled]) => {
      const nodes = deps.map((parents, i) =>
        node(
          `n${i}`,
          ...[...new Set(i === 0 ? [] : parents.map((p) => p % i))].map((p) => `n${p}`),
        ),
      );
      return shuffled.map((i) => nodes[i]!);
    }),
);

function isTopological(nodes: readonly GraphNode[], order: readonly string[]): boolean {
  const position = new Map(order.map((key, i) => [key, i]));
  if (position.size !== nodes.length) return false;
  return nodes.every((n) => n.dependsOn.every((p) => position.get(p)! < position.get(n.key)!));
}

function isCycle(nodes: readonly GraphNode[], cycle: readonly string[]): boolean {
  const deps = new Map(nodes.map((n) => [n.key, new Set(n.dependsOn)]));
  if (cycle.length < 2 || cycle[0] !== cycle[cycle.length - 1]) return false;
  // cycle reads parent → child: each next key depends on the one before it.
  return cycle.slice(1).every((child, i) => deps.get(child)?.has(cycle[i]!) === true);
}

describe("orderGraph", () => {
  it("orders parents before children", () => {
    const result = orderGraph([node("c", "a", "b"), node("b", "a"), node("a")]);
    expect(result).toEqual({ kind: "ordered", order: ["a", "b", "c"] });
  });

  it("names one cycle, parent → child", () => {
    const result = orderGraph([
      node("root"),
      node("a", "c", "root"),
      node("b", "a"),
      node("c", "b"),
    ]);
    expect(result.kind).toBe("cycle");
    if (result.kind !== "cycle") return;
    expect(result.cycle).toHaveLength(4);
    expect(isCycle([node("a", "c"), node("b", "a"), node("c", "b")], result.cycle)).toBe(true);
    expect(describeCycle(["a", "b", "c", "a"])).toBe("a → b → c → a");
  });

  it("handles a 10,000-node chain without recursion", () => {
    const nodes = Array.from({ length: 10_000 }, (_, i) =>
      i === 0 ? node("k0", "k9999") : node(`k${i}`, `k${i - 1}`),
    );
    const result = orderGraph(nodes);
    expect(result.kind).toBe("cycle");
    if (result.kind === "cycle") expect(result.cycle).toHaveLength(10_001);
    expect(orderGraph([node("k0"), ...nodes.slice(1)]).kind).toBe("ordered");
  });

  it("property: a topological order is returned iff no cycle is reported, and each answer is a proof", () => {
    fc.assert(
      fc.property(anyGraph, (nodes) => {
        const result = orderGraph(nodes);
        if (result.kind === "ordered") return isTopological(nodes, result.order);
        return isCycle(nodes, result.cycle);
      }),
      propertyParams({ numRuns: 500 }),
    );
  });

  it("property: a DAG always has an order", () => {
    fc.assert(
      fc.property(anyDag, (nodes) => {
        const result = orderGraph(nodes);
        return result.kind === "ordered" && isTopological(nodes, result.order);
      }),
      propertyParams({ numRuns: 300 }),
    );
  });
});
