/**
 * The DAG releaser, for code that moves a task to a terminal state.
 *
 * Contract: call releaseDependents with a client INSIDE the open transaction
 * that made the task terminal (a worker's fenced completion or death, the
 * reconciler failing an expired lease for good, a cancel), after that update
 * and before COMMIT. The release then commits or rolls back with the outcome
 * itself, so no crash can lose or duplicate one. It takes the workflow's row
 * lock until the caller commits (see migrations/000007_workflows.sql on why
 * and on lock order). It is idempotent: calling it again for the same task
 * changes nothing and returns an empty outcome; for a task outside any
 * workflow it is a no-op (one primary-key read), so callers may call it for
 * every terminal transition.
 *
 * Released tasks are not in Redis yet: after COMMIT, the caller hands
 * `outcome.released` to the hot tier (app/execution/execution-service.ts) so they fire on
 * time. If that add is lost, the reconciler re-hydrates due SCHEDULED tasks
 * missing from Redis and the pre-loader sweeps the window; that repair only
 * costs latency, hence an explicit add for the common case.
 */
import type pg from "pg";
import type { WorkflowStatus } from "../../domain/workflow-run.js";
import type { DueEntry } from "../../ports/hot-tier.js";
import { isoOfMs, roundMs } from "./epoch-ms.js";
import { COMPLETED_PARENTS, RELEASE_DEPENDENTS, TASK_RESULTS } from "./sql/workflows.js";

/** A pg connection: a Client or a pool's client, inside a transaction. */
export type TxClient = Pick<pg.ClientBase, "query">;

export interface ReleaseOutcome {
  /** Moved WAITING → SCHEDULED by this call, with their run_at. */
  released: DueEntry[];
  /** Moved WAITING → SKIPPED (their rule can no longer be met), skips propagated. */
  skipped: string[];
  /** Cancelled because the task died in a fail_fast workflow. */
  cancelled: string[];
  /** Set when this call ended the workflow. */
  finished: { workflowId: string; status: WorkflowStatus } | null;
}

export interface TerminalTask {
  taskId: string;
  /** The task's run_at (the partition key), exactly as stored. */
  runAtMs: number;
}

interface ReleaseRow {
  kind: "released" | "skipped" | "cancelled" | "finished";
  task_id: string;
  tenant_id: string;
  run_at_ms: number | null;
  detail: string | null;
}

export async function releaseDependents(
  client: TxClient,
  task: TerminalTask,
  nowMs: number,
): Promise<ReleaseOutcome> {
  const result = await client.query<ReleaseRow>(RELEASE_DEPENDENTS, [
    task.taskId,
    isoOfMs(task.runAtMs),
    nowMs,
  ]);
  const outcome: ReleaseOutcome = { released: [], skipped: [], cancelled: [], finished: null };
  for (const row of result.rows) {
    if (row.kind === "released") {
      const runAtMs = roundMs(row.run_at_ms!);
      outcome.released.push({ tenantId: row.tenant_id, taskId: row.task_id, runAtMs });
    } else if (row.kind === "skipped") outcome.skipped.push(row.task_id);
    else if (row.kind === "cancelled") outcome.cancelled.push(row.task_id);
    else outcome.finished = { workflowId: row.task_id, status: row.detail as WorkflowStatus };
  }
  return outcome;
}

/**
 * What a child's handler sees of its parents: {parent_key: result} for each
 * parent that COMPLETED (a skipped, dead or cancelled parent has no entry).
 * Empty for a task outside any workflow.
 */
export async function parentResults(
  client: TxClient,
  taskId: string,
): Promise<Record<string, unknown>> {
  const parents = await client.query<{
    parent_key: string;
    tenant_id: string;
    task_id: string;
    task_run_at: Date;
  }>(COMPLETED_PARENTS, [taskId]);
  if (parents.rows.length === 0) return {};
  const results = await client.query<{ id: string; result: unknown }>(TASK_RESULTS, [
    parents.rows.map((p) => p.task_id),
    parents.rows.map((p) => p.task_run_at),
    parents.rows.map((p) => p.tenant_id),
  ]);
  const resultOf = new Map(results.rows.map((row) => [row.id, row.result]));
  const byKey: Record<string, unknown> = {};
  for (const p of parents.rows) byKey[p.parent_key] = resultOf.get(p.task_id) ?? null;
  return byKey;
}
