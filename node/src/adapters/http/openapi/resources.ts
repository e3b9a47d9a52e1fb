/**
 * What the API answers, as zod schemas: the one description of each
 * response body. The OpenAPI document is generated from them
 * (openapi/document.ts), the typed client's result types are their
 * `z.output` (client/types.ts), and the client's integration test parses
 * every answer with them, strictly, so a presenter (present.ts,
 * present-workflow.ts, schedule-routes.ts) that adds, drops or retypes a
 * field fails a test until this file says the same.
 *
 * The dashboard's answers are in dashboard-resources.ts. Request bodies
 * are not here: they are the validating schemas of the domain
 * (TaskSubmission, WorkflowSubmission, ScheduleCreate, SchedulePatch), of
 * execution-routes.ts and of app/dashboard/dashboard-requests.ts.
 */
import { z } from "zod";
import { ErrorCode } from "../../../domain/errors.js";
import { MISFIRE_POLICIES, OVERLAP_POLICIES } from "../../../domain/schedule.js";
import { BACKOFF_STRATEGIES, PRIORITIES, TASK_STATUSES } from "../../../domain/task.js";
import { TRIGGER_RULES } from "../../../domain/workflow-trigger.js";

// The parts every answer is made of (dashboard-resources.ts uses them too).
export const instant = z.iso.datetime().describe("RFC 3339, UTC, milliseconds");
export const count = z.number().int().min(0);
export const uuid = z
  .string()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
export const status = z.enum(TASK_STATUSES);
const backoff = z.strictObject({
  strategy: z.enum(BACKOFF_STRATEGIES),
  base_ms: count,
  max_ms: count,
});
export const workflowStatus = z.enum(["RUNNING", "COMPLETED", "FAILED", "CANCELLED"]);
export const cursor = z
  .string()
  .nullable()
  .describe("Pass as `cursor` for the next page; null on the last page.");

export const TaskResource = z
  .strictObject({
    id: uuid,
    type: z.string(),
    status,
    priority: z.enum(PRIORITIES),
    run_at: instant,
    payload: z.unknown(),
    attempt: count.describe("Attempts started so far."),
    max_attempts: count,
    timeout_ms: count,
    backoff,
    idempotency_key: z.string().nullable(),
    result: z.unknown().describe("The handler's result once COMPLETED, else null."),
    last_error: z.unknown().describe("The last failure: {message, code, retryable, ...} or null."),
    workflow_id: uuid.nullable(),
    schedule_id: uuid.nullable(),
    created_at: instant,
    updated_at: instant.describe("The last change of state (or of anything else)."),
    cancelled_at: instant.nullable(),
    finished_at: instant.nullable(),
  })
  .meta({ id: "Task", description: "A task, as every task route answers it." });

export const TaskPage = z
  .strictObject({ tasks: z.array(TaskResource), next_cursor: cursor })
  .meta({ id: "TaskPage" });

export const ErrorBody = z
  .strictObject({
    error: z.strictObject({
      code: z.enum(Object.values(ErrorCode) as [ErrorCode, ...ErrorCode[]]),
      message: z.string(),
      details: z.record(z.string(), z.unknown()),
    }),
  })
  .meta({
    id: "Error",
    description: "Every error: a stable code (docs/api.md, Errors), a message, details.",
  });

export const BatchItem = z
  .union([
    z.strictObject({
      id: uuid,
      status: z.literal("SCHEDULED"),
      run_at: instant,
      idempotent_replayed: z.literal(false),
    }),
    z.strictObject({ id: uuid, idempotent_replayed: z.literal(true) }),
    ErrorBody,
  ])
  .meta({
    id: "BatchItem",
    description: "A created task, a replayed one (its original id), or an idempotency conflict.",
  });

export const BatchResult = z
  .strictObject({ tasks: z.array(BatchItem) })
  .meta({ id: "BatchResult", description: "One item per submitted task, in order." });

export const WorkflowResource = z
  .strictObject({
    id: uuid,
    status: workflowStatus,
    fail_fast: z.boolean(),
    node_count: count,
    pending_nodes: count,
    created_at: instant,
    updated_at: instant,
    finished_at: instant.nullable(),
    nodes: z.array(
      z.strictObject({
        key: z.string(),
        task_id: uuid,
        status,
        trigger_rule: z.enum(TRIGGER_RULES),
        depends_on: z.array(z.string()),
        attempt: count,
        run_at: instant,
        finished_at: instant.nullable(),
      }),
    ),
  })
  .meta({ id: "Workflow" });

const scheduleFields = {
  id: uuid,
  name: z.string(),
  expression: z.string(),
  time_zone: z.string(),
  type: z.string(),
  payload: z.unknown(),
  priority: z.enum(PRIORITIES),
  max_attempts: count,
  timeout_ms: count,
  backoff,
  misfire_policy: z.enum(MISFIRE_POLICIES),
  overlap_policy: z.enum(OVERLAP_POLICIES),
  jitter_ms: count,
  expect_within_ms: count.nullable(),
  paused: z.boolean(),
  next_occurrence_at: instant.nullable(),
  planned_through: instant.nullable(),
  created_at: instant,
  updated_at: instant,
};
export const ScheduleResource = z.strictObject(scheduleFields).meta({ id: "Schedule" });

export const ScheduleView = z
  .strictObject({
    ...scheduleFields,
    history: z.array(
      z.strictObject({
        scheduled_for: instant,
        outcome: z.enum(["planned", "buffered", "skipped_overlap", "released"]),
        catch_up: z.boolean(),
        task_id: uuid.nullable(),
        run_at: instant.nullable(),
        status: status.nullable(),
        attempt: count.nullable(),
      }),
    ),
  })
  .meta({ id: "ScheduleView", description: "A schedule and its latest occurrences." });

export const SchedulePage = z
  .strictObject({ schedules: z.array(ScheduleResource), next_cursor: cursor })
  .meta({ id: "SchedulePage" });

export const ScheduleUpdated = z
  .strictObject({ ...scheduleFields, cancelled_task_ids: z.array(uuid) })
  .meta({ id: "ScheduleUpdated", description: "The schedule after the change." });

export const ScheduleDeleted = z
  .strictObject({ id: uuid, deleted: z.literal(true), cancelled_task_ids: z.array(uuid) })
  .meta({ id: "ScheduleDeleted" });

export const ExecutionStarted = z
  .strictObject({
    task_id: uuid,
    status: z.literal("RUNNING"),
    attempt: count,
    max_attempts: count,
    run_at: instant,
    timeout_ms: count,
    lease_expires_at: instant,
  })
  .meta({ id: "ExecutionStarted" });

export const ExecutionExtended = z
  .strictObject({ task_id: uuid, status: z.literal("RUNNING"), lease_expires_at: instant })
  .meta({ id: "ExecutionExtended" });

export const ExecutionCompleted = z
  .strictObject({ task_id: uuid, status: z.literal("COMPLETED") })
  .meta({ id: "ExecutionCompleted" });

export const ExecutionSettled = z
  .union([
    z.strictObject({
      task_id: uuid,
      status: z.literal("SCHEDULED"),
      attempt: count,
      next_run_at: instant,
    }),
    z.strictObject({
      task_id: uuid,
      status: z.literal("DEAD"),
      attempt: count,
      dead_letter_id: uuid,
    }),
    z.strictObject({ task_id: uuid, status: z.literal("CANCELLED"), attempt: count }),
  ])
  .meta({
    id: "ExecutionSettled",
    description: "A failure settled: retried later, dead, or cancelled with its workflow.",
  });

export const Health = z.strictObject({ status: z.literal("ok") }).meta({ id: "Health" });

export const Readiness = z
  .strictObject({
    status: z.enum(["ready", "not_ready"]),
    checks: z.record(z.string(), z.enum(["ok", "unavailable"])),
  })
  .meta({ id: "Readiness" });
