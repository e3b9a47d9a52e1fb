/**
 * The checker's two workflow rules (checker.ts runs them with the others):
 *  - dag_order: no node started before its parents had finished as its
 *    trigger rule requires (from the parents' finish instants and the
 *    node's first handler start);
 *  - dag_outcome: every node ended as its trigger rule decides from its
 *    parents' final states — released nodes ran and ended as their intent
 *    says, the others were SKIPPED. The table is written out again here, on
 *    purpose, rather than imported from domain/workflow-trigger.ts: a
 *    checker that shares the code it checks would agree with its bugs.
 */
import type { Index, Rule } from "./checker.js";
import type { History, SubmittedTask, TaskRow, WorkflowNode } from "./history.js";

type Decision = "release" | "skip" | "undecided";

/** The trigger rule's decision from the parents' current statuses (docs/api.md, Workflows). */
export function decide(rule: WorkflowNode["triggerRule"], parents: readonly string[]): Decision {
  const terminal = (s: string) => ["COMPLETED", "DEAD", "CANCELLED", "SKIPPED"].includes(s);
  const allDone = parents.every(terminal);
  const anyCompleted = parents.includes("COMPLETED");
  const anyDead = parents.includes("DEAD");
  switch (rule) {
    case "all_success":
      if (parents.some((s) => s === "DEAD" || s === "SKIPPED" || s === "CANCELLED")) return "skip";
      return allDone ? "release" : "undecided";
    case "all_done":
      return allDone ? "release" : "undecided";
    case "one_success":
      if (anyCompleted) return "release";
      return allDone ? "skip" : "undecided";
    case "one_failed":
      if (anyDead) return "release";
      return allDone ? "skip" : "undecided";
    case "none_failed":
      if (anyDead) return "skip";
      return allDone ? "release" : "undecided";
  }
}

const parentsOf = (h: History, node: WorkflowNode): WorkflowNode[] => {
  const byKey = new Map(
    h.workflowNodes.filter((n) => n.workflowId === node.workflowId).map((n) => [n.key, n]),
  );
  return node.dependsOn.map((k) => byKey.get(k)!);
};

/** No DAG node started before its parents finished as its trigger rule requires. */
export const dagOrder: Rule = (h, { rows, executionsOf }) => {
  const problems: string[] = [];
  for (const node of h.workflowNodes) {
    const starts = (executionsOf.get(node.taskId) ?? []).map((e) => e.startedAtMs);
    if (starts.length === 0 || node.dependsOn.length === 0) continue;
    const firstStart = starts.reduce((a, b) => Math.min(a, b));
    // A parent counts as it stood at the child's first start: finished by then, or still pending.
    const asOfStart = parentsOf(h, node).map((p) => {
      const row = rows.get(p.taskId);
      return row && row.finishedAtMs !== null && row.finishedAtMs <= firstStart
        ? row.status
        : "PENDING";
    });
    if (decide(node.triggerRule, asOfStart) !== "release")
      problems.push(
        `workflow ${node.workflowId} node ${node.key} (${node.triggerRule}) started at ${firstStart} while its parents were ${asOfStart.join(", ")}`,
      );
  }
  return problems;
};

const expectedOfIntent = (task: SubmittedTask | undefined): string =>
  task?.intent === "fail_always" ? "DEAD" : "COMPLETED";

/** Every terminal node ended as its trigger rule decides from its parents' final states. */
export const dagOutcome: Rule = (h: History, { rows }: Index) => {
  const intentOf = new Map(h.submitted.map((t) => [t.taskId, t]));
  const cancelRequested = new Set(h.cancels.map((c) => c.taskId));
  const problems: string[] = [];
  for (const node of h.workflowNodes) {
    const row: TaskRow | undefined = rows.get(node.taskId);
    if (!row || !["COMPLETED", "DEAD", "CANCELLED", "SKIPPED"].includes(row.status)) continue;
    if (row.status === "CANCELLED") {
      if (!cancelRequested.has(node.taskId))
        problems.push(
          `workflow ${node.workflowId} node ${node.key} is CANCELLED, nobody cancelled it`,
        );
      continue;
    }
    const parents = parentsOf(h, node).map((p) => rows.get(p.taskId)?.status ?? "MISSING");
    const decision = node.dependsOn.length === 0 ? "release" : decide(node.triggerRule, parents);
    const expected =
      decision === "release"
        ? expectedOfIntent(intentOf.get(node.taskId))
        : decision === "skip"
          ? "SKIPPED"
          : "WAITING";
    if (row.status !== expected)
      problems.push(
        `workflow ${node.workflowId} node ${node.key} (${node.triggerRule}, parents ${parents.join(", ") || "none"}) is ${row.status}, expected ${expected}`,
      );
  }
  return problems;
};
