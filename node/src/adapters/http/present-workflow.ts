/** The public JSON shape of a workflow: snake_case, RFC 3339 times. */
import type { WorkflowView } from "../../ports/workflow-store.js";

const iso = (epochMs: number | null): string | null =>
  epochMs === null ? null : new Date(epochMs).toISOString();

export function presentWorkflow(view: WorkflowView): Record<string, unknown> {
  return {
    id: view.id,
    status: view.status,
    fail_fast: view.failFast,
    node_count: view.nodeCount,
    pending_nodes: view.pendingNodes,
    created_at: iso(view.createdAtMs),
    updated_at: iso(view.updatedAtMs),
    finished_at: iso(view.finishedAtMs),
    nodes: view.nodes.map((node) => ({
      key: node.key,
      task_id: node.taskId,
      status: node.status,
      trigger_rule: node.triggerRule,
      depends_on: node.dependsOn,
      attempt: node.attempt,
      run_at: iso(node.runAtMs),
      finished_at: iso(node.finishedAtMs),
    })),
  };
}
