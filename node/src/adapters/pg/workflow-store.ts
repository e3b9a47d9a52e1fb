import type { WorkflowDraft } from "../../domain/workflow.js";
import type {
  WorkflowCancelOutcome,
  WorkflowNodeView,
  WorkflowStore,
  WorkflowView,
} from "../../ports/workflow-store.js";
import { roundMs, roundMsOrNull } from "./epoch-ms.js";
import { fromPgError } from "./errors.js";
import { type PgPool, withTenant } from "./pool.js";
import {
  CANCEL_WORKFLOW,
  GET_WORKFLOW,
  GET_WORKFLOW_NODES,
  INSERT_WORKFLOW,
} from "./sql/workflows.js";
import { encodeRow } from "./task-store.js";

/** The Postgres WorkflowStore. Every method maps failures through fromPgError. */
export class PgWorkflowStore implements WorkflowStore {
  constructor(private readonly pool: PgPool) {}

  async insert(
    draft: WorkflowDraft,
    audit: { apiKeyId: string; requestId: string },
    nowMs: number,
  ): Promise<void> {
    const nodes = encodeNodes(draft, audit);
    const workflow = JSON.stringify({
      id: draft.id,
      tenant_id: draft.tenantId,
      fail_fast: draft.failFast,
      api_key_id: audit.apiKeyId,
      request_id: audit.requestId,
    });
    try {
      await this.pool.query(INSERT_WORKFLOW, [workflow, nodes, nowMs]);
    } catch (error) {
      throw fromPgError(error, "insert workflow");
    }
  }

  async get(tenantId: string, workflowId: string): Promise<WorkflowView | null> {
    try {
      return await withTenant(this.pool, tenantId, async (client) => {
        const found = await client.query(GET_WORKFLOW, [tenantId, workflowId]);
        const row = found.rows[0];
        if (!row) return null;
        const nodes = await client.query(GET_WORKFLOW_NODES, [tenantId, workflowId]);
        return {
          id: row.id,
          status: row.status,
          failFast: row.fail_fast,
          nodeCount: row.node_count,
          pendingNodes: row.pending_nodes,
          createdAtMs: roundMs(row.created_at_ms),
          updatedAtMs: roundMs(row.updated_at_ms),
          finishedAtMs: roundMsOrNull(row.finished_at_ms),
          nodes: nodes.rows.map(toNodeView),
        };
      });
    } catch (error) {
      throw fromPgError(error, "get workflow");
    }
  }

  async cancel(
    tenantId: string,
    workflowId: string,
    apiKeyId: string,
    nowMs: number,
  ): Promise<WorkflowCancelOutcome> {
    try {
      return await withTenant(this.pool, tenantId, async (client) => {
        const result = await client.query(CANCEL_WORKFLOW, [tenantId, workflowId, nowMs, apiKeyId]);
        const { outcome, cancelled_task_ids } = result.rows[0];
        if (outcome === "cancelled")
          return { kind: "cancelled", cancelledTaskIds: cancelled_task_ids };
        return { kind: outcome };
      });
    } catch (error) {
      throw fromPgError(error, "cancel workflow");
    }
  }
}

/** The rows of cf_insert_tasks (the same encoding) plus each node's place in the graph. */
function encodeNodes(draft: WorkflowDraft, audit: { apiKeyId: string; requestId: string }): string {
  const parts = draft.nodes.map((node, ord) => {
    const row = encodeRow({ draft: node.task, requestHash: null, ...audit }, ord);
    return (
      `${row.slice(0, -1)},"key":${JSON.stringify(node.key)},` +
      `"trigger_rule":"${node.triggerRule}","not_before_ms":${node.notBeforeMs ?? "null"},` +
      `"delay_ms":${node.delayMs},"depends_on":${JSON.stringify(node.dependsOn)}}`
    );
  });
  return `[${parts.join(",")}]`;
}

interface NodeRow {
  node_key: string;
  task_id: string;
  status: WorkflowNodeView["status"];
  trigger_rule: WorkflowNodeView["triggerRule"];
  attempt: number;
  run_at_ms: number;
  finished_at_ms: number | null;
  depends_on: string[];
}

function toNodeView(row: NodeRow): WorkflowNodeView {
  return {
    key: row.node_key,
    taskId: row.task_id,
    status: row.status,
    triggerRule: row.trigger_rule,
    dependsOn: row.depends_on,
    attempt: row.attempt,
    runAtMs: roundMs(row.run_at_ms),
    finishedAtMs: roundMsOrNull(row.finished_at_ms),
  };
}
