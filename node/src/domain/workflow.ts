/**
 * Validation of workflow submissions (`POST /v1/workflows`). A workflow is
 * `{nodes: [...], fail_fast?}`; a node is a task submission (validated by
 * validateSubmission, so the same fields, defaults and limits) plus `key`,
 * `depends_on` and `trigger_rule`. Errors follow submission.ts: 400 for
 * shape, 422 for rules; `details.index` names the node, `details.rule` the
 * graph rule broken (too_many_nodes, too_many_edges, duplicate_key,
 * unknown_dependency, self_dependency, duplicate_dependency, cycle).
 *
 * When a node runs: a root at its own `run_at`/`delay_ms`, like a task. A
 * node with parents is released when its trigger rule says so; then a
 * `delay_ms` counts from the release and a `run_at` is a "not before"
 * (run_at = max(release instant, run_at)). The task row of a waiting node
 * holds the earliest instant it could run (its run_at, or submission +
 * delay_ms) until the release sets the real one.
 */
import { z } from "zod";
import { ChronofenceError, ErrorCode } from "./errors.js";
import {
  type SubmissionContext,
  TASK_SUBMISSION_FIELDS,
  TASK_TYPE_PATTERN,
  validateSubmission,
} from "./submission.js";
import type { TaskDraft } from "./task.js";
import { describeCycle, orderGraph } from "./workflow-graph.js";
import { TRIGGER_RULES, type TriggerRule } from "./workflow-trigger.js";

export const MAX_WORKFLOW_NODES = 10_000;
/**
 * Parent links in one workflow, all nodes together: ten per node at the
 * node limit. Without it a body of a few hundred nodes that each name every
 * node before them is a million edge rows in one transaction.
 */
export const MAX_WORKFLOW_EDGES = 100_000;

export interface WorkflowNodeDraft {
  key: string;
  dependsOn: string[];
  triggerRule: TriggerRule;
  /** The task; runAtMs is when a root runs, or the earliest a child can. */
  task: TaskDraft;
  /** A child's requested run_at (a "not before"), or null. */
  notBeforeMs: number | null;
  /** A child's delay after its release (0 when neither run_at nor delay_ms was given). */
  delayMs: number;
}

export interface WorkflowDraft {
  id: string;
  tenantId: string;
  failFast: boolean;
  createdAtMs: number;
  /** In topological order: parents before children. */
  nodes: WorkflowNodeDraft[];
}

const envelope = z.strictObject({
  nodes: z.array(z.unknown()),
  fail_fast: z.boolean().optional(),
});

const nodeFields = z.looseObject({
  key: z.string(),
  depends_on: z.array(z.string()).optional(),
  trigger_rule: z.string().optional(),
  idempotency_key: z
    .never({ error: "idempotency keys are not supported on workflow nodes" })
    .optional(),
});

/**
 * A workflow as the API documents it (OpenAPI, the typed client): each node
 * a task submission (the same field rules, no idempotency key) plus its key,
 * parents and trigger rule. The graph rules (unique keys, known parents, no
 * cycle) are checked on top.
 */
const { idempotency_key: _noKey, ...nodeTaskFields } = TASK_SUBMISSION_FIELDS;
export const WorkflowNodeSubmission = z
  .strictObject({
    ...nodeTaskFields,
    key: z.string().regex(TASK_TYPE_PATTERN).describe("Unique within the workflow."),
    depends_on: z.array(z.string()).optional().describe("Keys of the parents."),
    trigger_rule: z.enum(TRIGGER_RULES).default("all_success"),
  })
  .meta({ id: "WorkflowNodeSubmission" });
export const WorkflowSubmission = z
  .strictObject({
    nodes: z.array(WorkflowNodeSubmission).min(1).max(MAX_WORKFLOW_NODES),
    fail_fast: z.boolean().default(false),
  })
  .meta({ id: "WorkflowSubmission", description: "A DAG of task nodes, submitted in one commit." });

/** Validates a whole workflow; `newId` gives the workflow's and each node task's id. */
export function validateWorkflow(input: unknown, ctx: SubmissionContext): WorkflowDraft {
  const shaped = envelope.safeParse(input);
  if (!shaped.success) {
    throw new ChronofenceError(ErrorCode.InvalidRequest, 'expected {"nodes": [...]}', {
      details: { issues: issuesOf(shaped.error) },
    });
  }
  const count = shaped.data.nodes.length;
  if (count === 0 || count > MAX_WORKFLOW_NODES) {
    throw graphError(`a workflow holds 1 to ${MAX_WORKFLOW_NODES} nodes, got ${count}`, {
      rule: "too_many_nodes",
      count,
    });
  }
  const id = ctx.newTaskId();
  const nodes = shaped.data.nodes.map((node, index) => validateNode(node, ctx, index));
  const edges = nodes.reduce((sum, node) => sum + node.dependsOn.length, 0);
  if (edges > MAX_WORKFLOW_EDGES) {
    throw graphError(`a workflow holds at most ${MAX_WORKFLOW_EDGES} dependencies, got ${edges}`, {
      rule: "too_many_edges",
      count: edges,
    });
  }
  checkKeys(nodes);
  const ordered = orderGraph(nodes);
  if (ordered.kind === "cycle") {
    throw graphError(`workflow has a cycle: ${describeCycle(ordered.cycle)}`, {
      rule: "cycle",
      cycle: ordered.cycle,
    });
  }
  const byKey = new Map(nodes.map((n) => [n.key, n]));
  return {
    id,
    tenantId: ctx.tenantId,
    failFast: shaped.data.fail_fast ?? false,
    createdAtMs: ctx.nowMs,
    nodes: ordered.order.map((key) => byKey.get(key)!),
  };
}

function validateNode(input: unknown, ctx: SubmissionContext, index: number): WorkflowNodeDraft {
  // zod copies a loose object's keys by assignment, where `__proto__` vanishes: refuse it here,
  // as the strict task shape refuses any unknown field.
  if (typeof input === "object" && input !== null && Object.hasOwn(input, "__proto__")) {
    throw new ChronofenceError(ErrorCode.InvalidRequest, "malformed workflow node", {
      details: { index, issues: [{ path: "__proto__", message: "unknown field" }] },
    });
  }
  const shaped = nodeFields.safeParse(input);
  if (!shaped.success) {
    const unsupported = shaped.error.issues.some((i) => i.path[0] === "idempotency_key");
    throw new ChronofenceError(
      unsupported ? ErrorCode.Unprocessable : ErrorCode.InvalidRequest,
      "malformed workflow node",
      { details: { index, issues: issuesOf(shaped.error) } },
    );
  }
  const { key, depends_on, trigger_rule, ...taskFields } = shaped.data;
  if (!TASK_TYPE_PATTERN.test(key)) {
    throw nodeError(index, "key", "1-128 chars of letters, digits and . _ : / -");
  }
  if (trigger_rule !== undefined && !TRIGGER_RULES.includes(trigger_rule as TriggerRule)) {
    throw nodeError(index, "trigger_rule", `one of ${TRIGGER_RULES.join(", ")}`);
  }
  const { draft } = validateSubmission(taskFields, ctx, index);
  const runAtGiven = typeof taskFields.run_at === "string";
  return {
    key,
    dependsOn: depends_on ?? [],
    triggerRule: (trigger_rule as TriggerRule | undefined) ?? "all_success",
    task: draft,
    notBeforeMs: runAtGiven ? draft.runAtMs : null,
    delayMs: typeof taskFields.delay_ms === "number" ? taskFields.delay_ms : 0,
  };
}

function checkKeys(nodes: readonly WorkflowNodeDraft[]): void {
  const indexOf = new Map<string, number>();
  nodes.forEach((node, index) => {
    const first = indexOf.get(node.key);
    if (first !== undefined) {
      throw graphError(`duplicate node key ${JSON.stringify(node.key)}`, {
        rule: "duplicate_key",
        key: node.key,
        index,
        first_index: first,
      });
    }
    indexOf.set(node.key, index);
  });
  nodes.forEach((node, index) => {
    const seen = new Set<string>();
    for (const parent of node.dependsOn) {
      const at = { key: node.key, index, depends_on: parent };
      if (parent === node.key) {
        throw graphError(`node ${JSON.stringify(node.key)} depends on itself`, {
          rule: "self_dependency",
          ...at,
        });
      }
      if (!indexOf.has(parent)) {
        throw graphError(
          `node ${JSON.stringify(node.key)} depends on unknown key ${JSON.stringify(parent)}`,
          { rule: "unknown_dependency", ...at },
        );
      }
      if (seen.has(parent)) {
        throw graphError(
          `node ${JSON.stringify(node.key)} lists ${JSON.stringify(parent)} twice in depends_on`,
          { rule: "duplicate_dependency", ...at },
        );
      }
      seen.add(parent);
    }
  });
}

const graphError = (message: string, details: Record<string, unknown>) =>
  new ChronofenceError(ErrorCode.Unprocessable, message, { details });

const nodeError = (index: number, path: string, message: string) =>
  new ChronofenceError(ErrorCode.Unprocessable, "invalid workflow node", {
    details: { index, issues: [{ path, message }] },
  });

function issuesOf(error: z.ZodError): Array<{ path: string; message: string }> {
  return error.issues.slice(0, 10).map((issue) => ({
    path: issue.path.map(String).join("."),
    message: issue.message,
  }));
}
