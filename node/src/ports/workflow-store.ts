import type { TaskStatus } from "../domain/task.js";
import type { WorkflowDraft } from "../domain/workflow.js";
import type { WorkflowStatus } from "../domain/workflow-run.js";
import type { TriggerRule } from "../domain/workflow-trigger.js";

export interface WorkflowNodeView {
  key: string;
  taskId: string;
  status: TaskStatus;
  triggerRule: TriggerRule;
  dependsOn: string[];
  attempt: number;
  runAtMs: number;
  finishedAtMs: number | null;
}

export interface WorkflowView {
  id: string;
  status: WorkflowStatus;
  failFast: boolean;
  nodeCount: number;
  pendingNodes: number;
  createdAtMs: number;
  updatedAtMs: number;
  finishedAtMs: number | null;
  nodes: WorkflowNodeView[];
}

export type WorkflowCancelOutcome =
  | { kind: "cancelled"; cancelledTaskIds: string[] }
  | { kind: "not_found" }
  /** It had already ended: nothing was pending. */
  | { kind: "finished" };

/** Where workflows live; every method is scoped to the tenant given. */
export interface WorkflowStore {
  /** The workflow, its node tasks, edges and audit row: one transaction, durable when it resolves. */
  insert(
    draft: WorkflowDraft,
    audit: { apiKeyId: string; requestId: string },
    nowMs: number,
  ): Promise<void>;
  get(tenantId: string, workflowId: string): Promise<WorkflowView | null>;
  cancel(
    tenantId: string,
    workflowId: string,
    apiKeyId: string,
    nowMs: number,
  ): Promise<WorkflowCancelOutcome>;
}
