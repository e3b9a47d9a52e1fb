/**
 * The shape of a workflow: nodes named by key, each depending on parents.
 * Kahn's algorithm gives a topological order (parents before children) or,
 * when some nodes are left over, proves a cycle; one cycle is then named by
 * walking parent links among the leftovers, where every node still has a
 * leftover parent, until a key repeats. Iterative throughout: a chain of
 * 10,000 nodes must not overflow the stack.
 */
export interface GraphNode {
  key: string;
  dependsOn: readonly string[];
}

export type GraphOrder =
  | { kind: "ordered"; order: string[] }
  /** `cycle` runs parent → child and ends where it starts: ["a", "b", "a"]. */
  | { kind: "cycle"; cycle: string[] };

/** Assumes keys are unique and every dependency names a node (validate those first). */
export function orderGraph(nodes: readonly GraphNode[]): GraphOrder {
  const children = new Map<string, string[]>();
  const waitingOn = new Map<string, number>();
  for (const node of nodes) {
    waitingOn.set(node.key, node.dependsOn.length);
    for (const parent of node.dependsOn) {
      const list = children.get(parent);
      if (list) list.push(node.key);
      else children.set(parent, [node.key]);
    }
  }
  const order: string[] = nodes.filter((n) => n.dependsOn.length === 0).map((n) => n.key);
  for (let i = 0; i < order.length; i++) {
    for (const child of children.get(order[i]!) ?? []) {
      const left = waitingOn.get(child)! - 1;
      waitingOn.set(child, left);
      if (left === 0) order.push(child);
    }
  }
  if (order.length === nodes.length) return { kind: "ordered", order };
  return { kind: "cycle", cycle: cycleAmong(nodes, waitingOn) };
}

function cycleAmong(nodes: readonly GraphNode[], waitingOn: Map<string, number>): string[] {
  const depsOf = new Map(nodes.map((n) => [n.key, n.dependsOn]));
  const leftover = (key: string) => waitingOn.get(key)! > 0;
  const start = nodes.find((n) => leftover(n.key))!.key;
  const seenAt = new Map<string, number>();
  const path: string[] = [];
  let key = start;
  while (!seenAt.has(key)) {
    seenAt.set(key, path.length);
    path.push(key);
    key = depsOf.get(key)!.find(leftover)!;
  }
  // path walks child → parent; the cycle reads parent → child.
  const cycle = path.slice(seenAt.get(key)!).reverse();
  return [key, ...cycle];
}

/** "a → b → c → a" */
export const describeCycle = (cycle: readonly string[]): string => cycle.join(" → ");
