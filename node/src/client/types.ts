/**
 * The client's types, derived from the zod schemas the server validates
 * requests with (their `z.input`) and describes its answers with
 * (openapi/resources.ts, their `z.output`): the same schemas the OpenAPI
 * document is generated from, so a type is never written twice. Type-only
 * imports: the client carries no zod at run time.
 */
import type { z } from "zod";
import type {
  ExecutionCompleteRequest,
  ExecutionFailRequest,
  ExecutionInterruptRequest,
  ExecutionLeaseRequest,
} from "../adapters/http/execution-routes.js";
import type {
  WorkflowPage as WorkflowPageSchema,
  WorkflowSummaryResource,
} from "../adapters/http/openapi/dashboard-resources.js";
import type {
  BatchItem as BatchItemSchema,
  ExecutionCompleted as ExecutionCompletedSchema,
  ExecutionExtended as ExecutionExtendedSchema,
  ExecutionSettled as ExecutionSettledSchema,
  ExecutionStarted as ExecutionStartedSchema,
  ScheduleDeleted as ScheduleDeletedSchema,
  SchedulePage as SchedulePageSchema,
  ScheduleResource,
  ScheduleUpdated as ScheduleUpdatedSchema,
  ScheduleView as ScheduleViewSchema,
  TaskPage as TaskPageSchema,
  TaskResource,
  WorkflowResource,
} from "../adapters/http/openapi/resources.js";
import type {
  ScheduleCreate as ScheduleCreateSchema,
  SchedulePatch as SchedulePatchSchema,
} from "../domain/schedule.js";
import type { TaskSubmission as TaskSubmissionSchema } from "../domain/submission.js";
import type { TaskStatus } from "../domain/task.js";
import type { WorkflowSubmission as WorkflowSubmissionSchema } from "../domain/workflow.js";

export type { TaskStatus };

/** A task to submit (`POST /v1/tasks`), fields as the API spells them. */
export type TaskSubmission = z.input<typeof TaskSubmissionSchema>;
/** A task as the API answers it. */
export type Task = z.output<typeof TaskResource>;
export type TaskPage = z.output<typeof TaskPageSchema>;
/** One item of a batch's answer: created, replayed (the original's id) or a conflict. */
export type BatchItem = z.output<typeof BatchItemSchema>;

export type WorkflowSubmission = z.input<typeof WorkflowSubmissionSchema>;
export type Workflow = z.output<typeof WorkflowResource>;
/** A workflow without its nodes, as `GET /v1/workflows` lists it. */
export type WorkflowSummary = z.output<typeof WorkflowSummaryResource>;
export type WorkflowPage = z.output<typeof WorkflowPageSchema>;

export type ScheduleCreate = z.input<typeof ScheduleCreateSchema>;
export type SchedulePatch = z.input<typeof SchedulePatchSchema>;
export type Schedule = z.output<typeof ScheduleResource>;
export type SchedulePage = z.output<typeof SchedulePageSchema>;
export type ScheduleView = z.output<typeof ScheduleViewSchema>;
export type ScheduleUpdated = z.output<typeof ScheduleUpdatedSchema>;
export type ScheduleDeleted = z.output<typeof ScheduleDeletedSchema>;

export type ExecutionLease = z.input<typeof ExecutionLeaseRequest>;
export type ExecutionCompletion = z.input<typeof ExecutionCompleteRequest>;
export type ExecutionFailure = z.input<typeof ExecutionFailRequest>;
export type ExecutionInterruption = z.input<typeof ExecutionInterruptRequest>;
export type ExecutionStarted = z.output<typeof ExecutionStartedSchema>;
export type ExecutionExtended = z.output<typeof ExecutionExtendedSchema>;
export type ExecutionCompleted = z.output<typeof ExecutionCompletedSchema>;
/** A failure or interrupt settled: SCHEDULED (retry), DEAD or CANCELLED. */
export type ExecutionSettled = z.output<typeof ExecutionSettledSchema>;

/** `GET /v1/tasks` filters; `limit` is the page size, the iterator goes through every page. */
export interface TaskFilter {
  status?: TaskStatus;
  type?: string;
  limit?: number;
  /** `updated_at`: the change feed (docs/api.md, "The change feed"). */
  order?: "id" | "updated_at";
  /** With order `updated_at`: changes after this instant (RFC 3339 or a Date). */
  updatedAfter?: string | Date;
}

/** The paging of `workflows.list` and `schedules.list`: `limit` is the page size, the iterator goes through every page. */
export interface PageOptions {
  limit?: number;
}

/** A watchdog alert transition (`POST /v1/watchdog/alerts`). */
export type { AlertReport } from "../ports/dashboard-store.js";
