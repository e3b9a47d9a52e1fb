/**
 * The descriptions of the workflow, schedule, operations and reference
 * routes (routes.ts, schedule-routes.ts, reference-routes.ts), keyed by
 * route name, as in task-operations.ts.
 */
import { z } from "zod";
import { MAX_HISTORY } from "../../../app/schedules/schedules.js";
import { ScheduleCreate, SchedulePatch } from "../../../domain/schedule.js";
import { WorkflowSubmission } from "../../../domain/workflow.js";
import type { Operation } from "./operation.js";
import {
  Health,
  Readiness,
  ScheduleDeleted,
  SchedulePage,
  ScheduleResource,
  ScheduleUpdated,
  ScheduleView,
  WorkflowResource,
} from "./resources.js";

const workflowId = { id: "The workflow's id." };
const scheduleId = { id: "The schedule's id." };

export const WORKFLOW_OPERATIONS: Readonly<Record<string, Operation>> = {
  "POST /v1/workflows": {
    operationId: "submitWorkflow",
    tag: "workflows",
    summary: "Submit a DAG of 1–10,000 task nodes in one commit",
    description:
      "Roots are SCHEDULED at once, the other nodes WAITING until their trigger rule releases " +
      "or skips them. A cycle, an unknown or duplicate key answers 422 with details.rule.",
    authenticated: true,
    body: { schema: WorkflowSubmission, required: true },
    ok: { 201: { description: "Created and committed.", schema: WorkflowResource } },
    errors: [400, 401, 413, 422, 429, 503],
  },
  "GET /v1/workflows/{id}": {
    operationId: "getWorkflow",
    tag: "workflows",
    summary: "Get a workflow and the state of each node",
    authenticated: true,
    pathParameters: workflowId,
    ok: { 200: { description: "The workflow.", schema: WorkflowResource } },
    errors: [401, 404, 503],
  },
  "DELETE /v1/workflows/{id}": {
    operationId: "cancelWorkflow",
    tag: "workflows",
    summary: "Cancel a workflow's pending nodes",
    description: "Running nodes finish. A finished workflow answers 409 invalid_transition.",
    authenticated: true,
    pathParameters: workflowId,
    ok: { 200: { description: "The workflow, CANCELLED.", schema: WorkflowResource } },
    errors: [401, 404, 409, 503],
  },
};

export const SCHEDULE_OPERATIONS: Readonly<Record<string, Operation>> = {
  "POST /v1/schedules": {
    operationId: "createSchedule",
    tag: "schedules",
    summary: "Create a cron schedule",
    authenticated: true,
    body: { schema: ScheduleCreate, required: true },
    ok: { 201: { description: "Created.", schema: ScheduleResource } },
    errors: [400, 401, 409, 413, 422, 503],
  },
  "GET /v1/schedules": {
    operationId: "listSchedules",
    tag: "schedules",
    summary: "List schedules",
    authenticated: true,
    query: [
      {
        name: "limit",
        description: "Schedules per page (default 100).",
        schema: z.number().int().min(1).max(1000),
      },
      {
        name: "cursor",
        description: "The `next_cursor` of the previous page.",
        schema: z.string(),
      },
    ],
    ok: { 200: { description: "One page.", schema: SchedulePage } },
    errors: [400, 401, 503],
  },
  "GET /v1/schedules/{id}": {
    operationId: "getSchedule",
    tag: "schedules",
    summary: "Get a schedule and its latest occurrences",
    authenticated: true,
    pathParameters: scheduleId,
    query: [
      {
        name: "history",
        description: "How many of the latest occurrences to include (default 20).",
        schema: z.number().int().min(0).max(MAX_HISTORY),
      },
    ],
    ok: { 200: { description: "The schedule.", schema: ScheduleView } },
    errors: [400, 401, 404, 503],
  },
  "PATCH /v1/schedules/{id}": {
    operationId: "updateSchedule",
    tag: "schedules",
    summary: "Change, pause or resume a schedule",
    description:
      "A change of when or what it runs cancels the occurrences not yet started and plans them again.",
    authenticated: true,
    pathParameters: scheduleId,
    body: { schema: SchedulePatch, required: true },
    ok: { 200: { description: "The schedule after the change.", schema: ScheduleUpdated } },
    errors: [400, 401, 404, 409, 413, 422, 503],
  },
  "DELETE /v1/schedules/{id}": {
    operationId: "deleteSchedule",
    tag: "schedules",
    summary: "Delete a schedule and cancel its occurrences not yet started",
    authenticated: true,
    pathParameters: scheduleId,
    ok: { 200: { description: "Deleted.", schema: ScheduleDeleted } },
    errors: [401, 404, 503],
  },
};

export const OPERATIONS_OPERATIONS: Readonly<Record<string, Operation>> = {
  "GET /healthz": {
    operationId: "health",
    tag: "operations",
    summary: "The process is alive",
    authenticated: false,
    ok: { 200: { description: "Alive.", schema: Health } },
    errors: [],
  },
  "GET /readyz": {
    operationId: "readiness",
    tag: "operations",
    summary: "Postgres and the hot tier answer",
    authenticated: false,
    ok: {
      200: { description: "Ready.", schema: Readiness },
      503: { description: "Not ready; `checks` says which dependency.", schema: Readiness },
    },
    errors: [],
  },
  "GET /metrics": {
    operationId: "metrics",
    tag: "operations",
    summary: "Prometheus metrics of this API process",
    authenticated: false,
    ok: { 200: { description: "Prometheus text format.", contentType: "text/plain" } },
    errors: [],
  },
};

export const REFERENCE_OPERATIONS: Readonly<Record<string, Operation>> = {
  "GET /openapi.json": {
    operationId: "openApiDocument",
    tag: "reference",
    summary: "This document (OpenAPI 3.1)",
    authenticated: false,
    ok: { 200: { description: "The OpenAPI document.", contentType: "application/json" } },
    errors: [],
  },
  "GET /docs": {
    operationId: "referencePage",
    tag: "reference",
    summary: "The API reference page (Swagger UI, served by this process)",
    authenticated: false,
    ok: { 200: { description: "An HTML page.", contentType: "text/html" } },
    errors: [],
  },
  "GET /docs/{asset}": {
    operationId: "referenceAsset",
    tag: "reference",
    summary: "A script or style sheet of the reference page",
    authenticated: false,
    pathParameters: { asset: "The file name, as the page links it." },
    ok: { 200: { description: "The asset.", contentType: "application/javascript" } },
    errors: [404],
  },
};
