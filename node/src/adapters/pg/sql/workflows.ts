/**
 * SQL of the workflow store and releaser. The functions they call, with their
 * contracts, are in migrations/000007_workflows.sql; each that changes a
 * workflow's nodes locks its workflows row FOR UPDATE first (lock order:
 * the workflow row, then task rows).
 */
import { sqlEpochMs, sqlTimestamptz } from "../epoch-ms.js";

/**
 * insert-workflow: cf_insert_workflow. $1 workflow jsonb, $2 nodes jsonb, $3 now_ms float8.
 * Locks: the rows it inserts. → 1 row (void). One statement, one commit.
 */
export const INSERT_WORKFLOW = `
SELECT cf_insert_workflow($1::jsonb, $2::jsonb, ${sqlTimestamptz("$3")})`;

/**
 * release-dependents: cf_release_dependents, inside the transaction that
 * made the task terminal. $1 task_id uuid, $2 run_at timestamptz, $3 now_ms float8.
 * Locks: the task's workflow row FOR UPDATE (to the caller's commit), then the
 * node and task rows it changes.
 * → rows (kind, task_id, tenant_id, run_at_ms, detail); none for a task outside a workflow.
 */
export const RELEASE_DEPENDENTS = `
SELECT kind, task_id, tenant_id, run_at_ms, detail
  FROM cf_release_dependents($1::uuid, $2::timestamptz, ${sqlTimestamptz("$3")})`;

/**
 * completed-parents: $1 child task_id uuid. Locks: nothing.
 * → rows (parent_key, tenant_id, task_id, task_run_at) for each COMPLETED parent.
 *   workflow_nodes.task_run_at is final once a node is terminal.
 */
export const COMPLETED_PARENTS = `
SELECT e.parent_key, p.tenant_id, p.task_id, p.task_run_at
  FROM workflow_edges e
  JOIN workflow_nodes p ON p.task_id = e.parent_task_id AND p.state = 'COMPLETED'
 WHERE e.child_task_id = $1
   AND p.task_id = ANY (ARRAY(SELECT pe.parent_task_id FROM workflow_edges pe WHERE pe.child_task_id = $1))`;

/**
 * task-results: $1 ids uuid[], $2 run_ats timestamptz[], $3 tenant ids uuid[]. Locks: nothing.
 * → rows (id, result). The run_ats arrive as values, so the planner prunes
 *   to their days' partitions.
 */
export const TASK_RESULTS = `
SELECT id, result FROM tasks
 WHERE tenant_id = ANY($3::uuid[]) AND id = ANY($1::uuid[]) AND run_at = ANY($2::timestamptz[])`;

/**
 * get-workflow: $1 tenant_id uuid, $2 workflow_id uuid. Locks: nothing.
 * → 0 or 1 row (id, status, fail_fast, node_count, pending_nodes, created_at_ms,
 *   updated_at_ms, finished_at_ms).
 */
export const GET_WORKFLOW = `
SELECT id, status, fail_fast, node_count, pending_nodes,
       ${sqlEpochMs("created_at")} AS created_at_ms,
       ${sqlEpochMs("updated_at")} AS updated_at_ms,
       ${sqlEpochMs("finished_at")} AS finished_at_ms
  FROM workflows WHERE tenant_id = $1 AND id = $2`;

/**
 * get-workflow-nodes: $1 tenant_id uuid, $2 workflow_id uuid. Locks: nothing.
 * → one row per node, in the order of the submission (task ids are UUIDv7
 *   drawn in that order). The status is the task's own (SCHEDULED, ARMED,
 *   RUNNING ... as it moves).
 */
export const GET_WORKFLOW_NODES = `
SELECT n.node_key, n.task_id, t.status, n.trigger_rule, t.attempt,
       ${sqlEpochMs("t.run_at")} AS run_at_ms,
       ${sqlEpochMs("coalesce(t.completed_at, t.dead_at, t.skipped_at, t.cancelled_at)")}
         AS finished_at_ms,
       coalesce((SELECT array_agg(e.parent_key ORDER BY e.parent_key)
                   FROM workflow_edges e WHERE e.child_task_id = n.task_id), '{}') AS depends_on
  FROM workflow_nodes n
  JOIN tasks t ON t.workflow_id = n.workflow_id AND t.id = n.task_id
 WHERE n.tenant_id = $1 AND n.workflow_id = $2
 ORDER BY n.task_id`;

/**
 * cancel-workflow: cf_cancel_workflow. $1 tenant_id uuid, $2 workflow_id uuid,
 * $3 now_ms float8, $4 api_key_id uuid.
 * Locks: the workflow row FOR UPDATE, then the pending nodes' task rows it cancels.
 * → 1 row (outcome, cancelled_task_ids).
 */
export const CANCEL_WORKFLOW = `
SELECT outcome, cancelled_task_ids
  FROM cf_cancel_workflow($1::uuid, $2::uuid, ${sqlTimestamptz("$3")}, $4::uuid)`;

/**
 * lock-workflow-of-task: $1 task_id uuid.
 * Locks: the row of the task's workflow, if it has one, FOR UPDATE. Taken
 * before a task's own row by anything that may then call the releaser (a
 * cancel), keeping the lock order of migrations/000007: workflow, then tasks.
 * → 0 or 1 row.
 */
export const LOCK_WORKFLOW_OF_TASK = `
SELECT 1 FROM workflows w
 WHERE w.id = (SELECT n.workflow_id FROM workflow_nodes n WHERE n.task_id = $1)
   FOR UPDATE`;
