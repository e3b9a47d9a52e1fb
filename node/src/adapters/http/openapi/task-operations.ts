/**
 * The descriptions of the task and execution routes (routes.ts,
 * execution-routes.ts), keyed by route name. Bodies are the schemas that
 * validate them; answers are openapi/resources.ts. docs/api.md is the
 * long form.
 */
import { z } from "zod";
import { CHANGE_FEED_WINDOW_TASKS, MAX_PAGE_LIMIT } from "../../../app/ingest/task-queries.js";
import {
  TASK_TYPE_PATTERN,
  TaskBatchSubmission,
  TaskSubmission,
} from "../../../domain/submission.js";
import { TASK_STATUSES } from "../../../domain/task.js";
import {
  ExecutionCompleteRequest,
  ExecutionFailRequest,
  ExecutionInterruptRequest,
  ExecutionLeaseRequest,
  ReplayRequest,
} from "../execution-routes.js";
import type { Operation } from "./operation.js";
import {
  BatchResult,
  ExecutionCompleted,
  ExecutionExtended,
  ExecutionSettled,
  ExecutionStarted,
  TaskPage,
  TaskResource,
} from "./resources.js";

const taskId = { id: "The task's id (a UUID)." };
const listQuery = [
  { name: "status", description: "Only tasks in this state.", schema: z.enum(TASK_STATUSES) },
  {
    name: "type",
    description: "Only tasks of this type.",
    schema: z.string().regex(TASK_TYPE_PATTERN),
  },
  {
    name: "limit",
    description: "Tasks per page (default 100).",
    schema: z.number().int().min(1).max(MAX_PAGE_LIMIT),
  },
  {
    name: "cursor",
    description: "The `next_cursor` of the previous page.",
    schema: z.string(),
  },
  {
    name: "order",
    description:
      "`id` (default): oldest first, by id. `updated_at`: the change feed, by last change then id " +
      `(only among the tenant's ${CHANGE_FEED_WINDOW_TASKS} most recently created tasks).`,
    schema: z.enum(["id", "updated_at"]),
  },
  {
    name: "updated_after",
    description:
      "With order=updated_at: only tasks changed after this instant (RFC 3339, exclusive; " +
      "URL-encode a `+` offset).",
    schema: z.string().meta({ format: "date-time" }),
  },
];
const execution = (
  operationId: string,
  summary: string,
  body: z.ZodType,
  ok: z.ZodType,
  description: string,
): Operation => ({
  operationId,
  tag: "executions",
  summary,
  description,
  authenticated: true,
  pathParameters: { id: "The envelope's task_id." },
  body: { schema: body, required: true },
  ok: { 200: { description: "Committed.", schema: ok } },
  errors: [400, 401, 404, 409, 413, 422, 503],
});
const stale =
  " A token that is not the task's current one (or a task that moved on) answers 409 " +
  "invalid_transition with details.reason stale_fencing_token, and changes nothing.";

export const TASK_OPERATIONS: Readonly<Record<string, Operation>> = {
  "POST /v1/tasks": {
    operationId: "submitTask",
    tag: "tasks",
    summary: "Submit a task",
    description:
      "Answers 201 once the task is committed. With an idempotency_key already used for the " +
      "same request: 200 with the original task and `Idempotent-Replayed: true`.",
    authenticated: true,
    body: { schema: TaskSubmission, required: true },
    ok: {
      201: { description: "Created and committed.", schema: TaskResource },
      200: {
        description: "An idempotent replay: the original task.",
        schema: TaskResource,
        headers: { "Idempotent-Replayed": "true" },
      },
    },
    errors: [400, 401, 409, 413, 422, 429, 503],
  },
  "POST /v1/tasks/batch": {
    operationId: "submitTaskBatch",
    tag: "tasks",
    summary: "Submit up to 1000 tasks in one commit",
    description:
      "All are validated before anything is written; one invalid task refuses the batch.",
    authenticated: true,
    body: { schema: TaskBatchSubmission, required: true },
    ok: { 201: { description: "One item per task, in order.", schema: BatchResult } },
    errors: [400, 401, 413, 422, 429, 503],
  },
  "GET /v1/tasks/{id}": {
    operationId: "getTask",
    tag: "tasks",
    summary: "Get a task",
    authenticated: true,
    pathParameters: taskId,
    ok: { 200: { description: "The task.", schema: TaskResource } },
    errors: [401, 404, 503],
  },
  "GET /v1/tasks": {
    operationId: "listTasks",
    tag: "tasks",
    summary: "List tasks, or follow their changes",
    description:
      "Keyset-paginated. With order=updated_at it is the change feed that `chronofence tail` " +
      `polls: each page reads at most the tenant's ${CHANGE_FEED_WINDOW_TASKS} most recently ` +
      "created tasks, so changes of older tasks are not in it, and a task that changed several " +
      "times between two polls appears once, as it is now.",
    authenticated: true,
    query: listQuery,
    ok: { 200: { description: "One page.", schema: TaskPage } },
    errors: [400, 401, 503],
  },
  "DELETE /v1/tasks/{id}": {
    operationId: "cancelTask",
    tag: "tasks",
    summary: "Cancel a task that has not started",
    description:
      "WAITING, SCHEDULED or ARMED only; any other state answers 409 invalid_transition.",
    authenticated: true,
    pathParameters: taskId,
    ok: { 200: { description: "The cancelled task.", schema: TaskResource } },
    errors: [401, 404, 409, 503],
  },
  "POST /v1/tasks/{id}/replay": {
    operationId: "replayTask",
    tag: "tasks",
    summary: "Run a DEAD task again, due now",
    description: "Any other state, or a DEAD workflow node, answers 409 invalid_transition.",
    authenticated: true,
    pathParameters: taskId,
    body: { schema: ReplayRequest, required: false, description: "No body, or {}." },
    ok: { 200: { description: "The task, SCHEDULED again.", schema: TaskResource } },
    errors: [400, 401, 404, 409, 503],
  },
  "POST /v1/executions/{id}/start": execution(
    "startExecution",
    "Start an attempt (fenced)",
    ExecutionLeaseRequest,
    ExecutionStarted,
    `ARMED → RUNNING for the holder of the envelope's fencing token.${stale}`,
  ),
  "POST /v1/executions/{id}/heartbeat": execution(
    "heartbeatExecution",
    "Extend the attempt's execution lease",
    ExecutionLeaseRequest,
    ExecutionExtended,
    `The lease now ends lease_ms from now.${stale}`,
  ),
  "POST /v1/executions/{id}/complete": execution(
    "completeExecution",
    "Commit success and the result",
    ExecutionCompleteRequest,
    ExecutionCompleted,
    `RUNNING → COMPLETED; a workflow node's children are released in the same commit.${stale}`,
  ),
  "POST /v1/executions/{id}/fail": execution(
    "failExecution",
    "Commit a failure: retried later or DEAD",
    ExecutionFailRequest,
    ExecutionSettled,
    `Retried after the task's backoff while attempts are left and retryable is true.${stale}`,
  ),
  "POST /v1/executions/{id}/interrupt": execution(
    "interruptExecution",
    "The worker is stopping: due again now, the attempt given back",
    ExecutionInterruptRequest,
    ExecutionSettled,
    `The task is SCHEDULED, due at once, with the same attempt count.${stale}`,
  ),
};
