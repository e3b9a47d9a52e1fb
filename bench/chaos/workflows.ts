/**
 * The workload's DAG workflows: four nodes in one of three shapes, each node
 * with a drawn intent (handlers.mjs modes) and each non-root with a drawn
 * trigger rule, so that over a run every rule meets completed, dead and
 * skipped parents. Failing nodes have one attempt (a workflow must not wait
 * for retries to show a DEAD parent).
 */
import type { Intent, WorkflowNode } from "./history.js";
import { BACKOFF, taskBody } from "./intents.js";
import type { Random } from "./random.js";

export interface DrawnNode {
  dependsOn: string[];
  triggerRule: WorkflowNode["triggerRule"];
  intent: Intent;
}

const SHAPES: Record<string, Record<string, string[]>> = {
  diamond: { a: [], b: ["a"], c: ["a"], d: ["b", "c"] },
  chain: { a: [], b: ["a"], c: ["b"], d: ["c"] },
  fan_in: { a: [], b: [], c: [], d: ["a", "b", "c"] },
};
const RULES: ReadonlyArray<WorkflowNode["triggerRule"]> = [
  "all_success",
  "all_done",
  "one_success",
  "one_failed",
  "none_failed",
];

export function drawWorkflow(random: Random): {
  body: { nodes: Array<Record<string, unknown>> };
  nodes: Map<string, DrawnNode>;
} {
  const shape = SHAPES[random.pick(Object.keys(SHAPES))]!;
  const nodes = new Map<string, DrawnNode>();
  const body = Object.entries(shape).map(([key, dependsOn]) => {
    const intent = random.weighted<Intent>({
      succeed: 65,
      fail_always: 20,
      fail_then_succeed: 10,
      slow: 5,
    });
    const triggerRule = dependsOn.length === 0 ? "all_success" : random.pick(RULES);
    nodes.set(key, { dependsOn, triggerRule, intent });
    const task = taskBody(random, intent);
    return {
      key,
      type: "chaos.run",
      depends_on: dependsOn,
      trigger_rule: triggerRule,
      delay_ms: dependsOn.length === 0 ? random.int(0, 2000) : random.int(0, 500),
      backoff: BACKOFF,
      ...task,
      ...(intent === "fail_always" && { max_attempts: 1 }),
    };
  });
  return { body: { nodes: body }, nodes };
}
