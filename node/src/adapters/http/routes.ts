/** The API's routes as plain async functions of a request (no HTTP library here). */

import type { ExecutionService } from "../../app/execution/execution-service.js";
import type { IngestService } from "../../app/ingest/ingest.js";
import type { TaskQueries } from "../../app/ingest/task-queries.js";
import type { Authenticator } from "../../app/shared/authenticator.js";
import type { WorkflowService } from "../../app/workflows/workflows.js";
import { ErrorCode, RateLimitedError } from "../../domain/errors.js";
import { bodyAllowanceBytes, MAX_BATCH_TASKS } from "../../domain/submission.js";
import type { Principal } from "../../domain/tenant.js";
import { MAX_WORKFLOW_NODES } from "../../domain/workflow.js";
import type { HealthCheck } from "../../ports/health.js";
import type { IngestMetrics } from "../../ports/ingest-metrics.js";
import {
  type Admission,
  type HttpReply,
  type HttpRequestData,
  json,
  type Route,
} from "./exchange.js";
import { executionRoutes } from "./execution-routes.js";
import { parseJson } from "./json-body.js";
import { presentTask } from "./present.js";
import { presentWorkflow } from "./present-workflow.js";
import { authorized } from "./route-scopes.js";

export interface RouteDeps {
  authenticator: Authenticator;
  ingest: IngestService;
  queries: TaskQueries;
  /** The fenced worker protocol and replay (execution-routes.ts). */
  executions: ExecutionService;
  nowMs: () => number;
  workflows: WorkflowService;
  health: HealthCheck[];
  metrics: IngestMetrics & { render(): Promise<{ contentType: string; body: string }> };
  /** Server-wide body caps; a tenant's own cap follows from its payload limit. */
  maxSingleBodyBytes: number;
  maxBatchBodyBytes: number;
  nextRequestId: () => string;
}

export function apiRoutes(deps: RouteDeps): Route[] {
  // Authenticates and checks the route's scope (route-scopes.ts).
  const principalOf = (request: HttpRequestData): Principal | Promise<Principal> =>
    authorized(deps.authenticator, request);
  /** Authenticates on the headers alone, then sizes the body for the tenant. */
  const admitting =
    (
      maxBodyBytes: number,
      tasks: number,
      handle: (p: Principal, body: Buffer) => Promise<HttpReply>,
    ) =>
    (request: HttpRequestData): Admission | Promise<Admission> => {
      const admit = (principal: Principal): Admission => ({
        maxBodyBytes: Math.min(
          maxBodyBytes,
          bodyAllowanceBytes(principal.limits.maxPayloadBytes, tasks),
        ),
        handle: (body) => handle(principal, body),
      });
      const principal = principalOf(request);
      return principal instanceof Promise ? principal.then(admit) : admit(principal);
    };
  const rateLimited = (error: unknown, tasks: number): never => {
    if (error instanceof RateLimitedError) deps.metrics.rateLimited(tasks);
    throw error;
  };

  return [
    {
      method: "post",
      pattern: "/v1/tasks",
      name: "POST /v1/tasks",
      maxBodyBytes: deps.maxSingleBodyBytes,
      admit: admitting(deps.maxSingleBodyBytes, 1, async (principal, raw) => {
        const body = parseJson(raw);
        const result = await deps.ingest
          .submitOne(principal, body, deps.nextRequestId())
          .catch((error: unknown) => rateLimited(error, 1));
        if (result.replayed)
          return json(200, presentTask(result.task), [["Idempotent-Replayed", "true"]]);
        return json(201, presentTask(result.task));
      }),
    },
    {
      method: "post",
      pattern: "/v1/tasks/batch",
      name: "POST /v1/tasks/batch",
      maxBodyBytes: deps.maxBatchBodyBytes,
      admit: admitting(deps.maxBatchBodyBytes, MAX_BATCH_TASKS, async (principal, raw) => {
        const body = parseJson(raw);
        const items = await deps.ingest
          .submitBatch(principal, body, deps.nextRequestId())
          .catch((error: unknown) => rateLimited(error, batchSizeOf(body)));
        return json(201, { tasks: items.map(presentBatchItem) });
      }),
    },
    {
      method: "get",
      pattern: "/v1/tasks/:id",
      name: "GET /v1/tasks/{id}",
      async handle(request) {
        const principal = await principalOf(request);
        return json(200, presentTask(await deps.queries.get(principal, request.params[0] ?? "")));
      },
    },
    {
      method: "get",
      pattern: "/v1/tasks",
      name: "GET /v1/tasks",
      async handle(request) {
        const principal = await principalOf(request);
        const page = await deps.queries.list(principal, listQueryOf(request.query));
        return json(200, { tasks: page.tasks.map(presentTask), next_cursor: page.nextCursor });
      },
    },
    {
      method: "del",
      pattern: "/v1/tasks/:id",
      name: "DELETE /v1/tasks/{id}",
      async handle(request) {
        const principal = await principalOf(request);
        return json(
          200,
          presentTask(await deps.queries.cancel(principal, request.params[0] ?? "")),
        );
      },
    },
    ...executionRoutes(
      {
        executions: deps.executions,
        presentTask: async (principal, taskId) =>
          presentTask(await deps.queries.get(principal, taskId)),
        maxBodyBytes: deps.maxSingleBodyBytes,
        nowMs: deps.nowMs,
      },
      admitting,
    ),
    ...workflowRoutes(deps, principalOf, admitting),
    {
      method: "get",
      pattern: "/healthz",
      name: "GET /healthz",
      handle: async () => json(200, { status: "ok" }),
    },
    {
      method: "get",
      pattern: "/readyz",
      name: "GET /readyz",
      handle: () => readiness(deps.health),
    },
    {
      method: "get",
      pattern: "/metrics",
      name: "GET /metrics",
      async handle() {
        const { contentType, body } = await deps.metrics.render();
        return { status: 200, body, contentType };
      },
    },
  ];
}

/** POST, GET and DELETE of /v1/workflows; a workflow body is sized like a batch. */
function workflowRoutes(
  deps: RouteDeps,
  principalOf: (request: HttpRequestData) => Principal | Promise<Principal>,
  admitting: (
    maxBodyBytes: number,
    tasks: number,
    handle: (p: Principal, body: Buffer) => Promise<HttpReply>,
  ) => (request: HttpRequestData) => Admission | Promise<Admission>,
): Route[] {
  return [
    {
      method: "post",
      pattern: "/v1/workflows",
      name: "POST /v1/workflows",
      maxBodyBytes: deps.maxBatchBodyBytes,
      admit: admitting(deps.maxBatchBodyBytes, MAX_WORKFLOW_NODES, async (principal, raw) => {
        const view = await deps.workflows.submit(principal, parseJson(raw), deps.nextRequestId());
        return json(201, presentWorkflow(view));
      }),
    },
    {
      method: "get",
      pattern: "/v1/workflows/:id",
      name: "GET /v1/workflows/{id}",
      async handle(request) {
        const principal = await principalOf(request);
        const view = await deps.workflows.get(principal, request.params[0] ?? "");
        return json(200, presentWorkflow(view));
      },
    },
    {
      method: "del",
      pattern: "/v1/workflows/:id",
      name: "DELETE /v1/workflows/{id}",
      async handle(request) {
        const principal = await principalOf(request);
        const view = await deps.workflows.cancel(principal, request.params[0] ?? "");
        return json(200, presentWorkflow(view));
      },
    },
  ];
}

async function readiness(checks: HealthCheck[]): Promise<HttpReply> {
  const results = await Promise.all(
    checks.map((c) =>
      c.check().then(
        () => [c.name, "ok"] as const,
        () => [c.name, "unavailable"] as const,
      ),
    ),
  );
  const ready = results.every(([, state]) => state === "ok");
  return json(ready ? 200 : 503, {
    status: ready ? "ready" : "not_ready",
    checks: Object.fromEntries(results),
  });
}

function listQueryOf(query: string) {
  const params = new URLSearchParams(query);
  const get = (name: string) => params.get(name) ?? undefined;
  return {
    status: get("status"),
    type: get("type"),
    cursor: get("cursor"),
    limit: get("limit"),
    order: get("order"),
    updated_after: get("updated_after"),
  };
}

function batchSizeOf(body: unknown): number {
  const tasks = (body as { tasks?: unknown })?.tasks;
  return Array.isArray(tasks) ? tasks.length : 0;
}

function presentBatchItem(item: Awaited<ReturnType<IngestService["submitBatch"]>>[number]) {
  if (item.kind === "conflict") {
    return {
      error: {
        code: ErrorCode.IdempotencyConflict,
        message: "idempotency key already used with a different request",
        details: { task_id: item.taskId },
      },
    };
  }
  // A replayed item names the original task; GET it for its current state.
  if (item.kind === "replayed") return { id: item.taskId, idempotent_replayed: true };
  return {
    id: item.taskId,
    status: "SCHEDULED",
    run_at: new Date(item.runAtMs).toISOString(),
    idempotent_replayed: false,
  };
}
