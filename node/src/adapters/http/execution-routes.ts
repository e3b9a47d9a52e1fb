/**
 * The fenced worker protocol over HTTP (docs/architecture.md sections 6 and 8), for
 * workers outside Node, and the replay of a dead task:
 *
 *   POST /v1/executions/{task id}/start|heartbeat|complete|fail|interrupt
 *   POST /v1/tasks/{id}/replay
 *
 * Every body names the attempt by the envelope's `fencing_token` and the
 * caller by `worker_id`. The execution use case (app/execution/execution-service.ts,
 * which the Node worker runs on too) does the fencing and the hot-tier
 * follow-ups; this module validates, scopes every call to the caller's tenant, and maps
 * outcomes: `stale` → 409 (code invalid_transition, details.reason
 * "stale_fencing_token"), a start before run_at (by the database's clock) →
 * 409 with details.reason "not_due" and due_in_ms, `not_found` → 404
 * (another tenant's task too).
 */
import { z } from "zod";
import type { ExecutionService } from "../../app/execution/execution-service.js";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import { workerStoppingFailure } from "../../domain/execution-error.js";
import { findJsonProblem, isStorableText, storedJsonBytes } from "../../domain/json-limits.js";
import { MAX_PAYLOAD_DEPTH } from "../../domain/submission.js";
import type { Principal } from "../../domain/tenant.js";
import type { ExecutionFailure, ExecutionRef, FailOutcome } from "../../ports/execution-store.js";
import { type BodyRoute, type HttpReply, json, type Route } from "./exchange.js";
import { parseJson } from "./json-body.js";

/** Authenticates on the headers, then caps the body for the tenant (routes.ts). */
export type Admitting = (
  maxBodyBytes: number,
  tasks: number,
  handle: (principal: Principal, body: Buffer) => Promise<HttpReply>,
) => BodyRoute["admit"];

export interface ExecutionRouteDeps {
  /** The one fenced execution use case (the Node worker's executor runs on it too). */
  executions: ExecutionService;
  /** The replayed task as GET /v1/tasks/{id} shows it. */
  presentTask(principal: Principal, taskId: string): Promise<Record<string, unknown>>;
  /** The server-wide cap for complete and fail bodies (the tenant's payload limit applies too). */
  maxBodyBytes: number;
  nowMs(): number;
}

export const DEFAULT_EXECUTION_LEASE_MS = 30_000;
/** Start and heartbeat bodies hold a token, a worker id and a lease: small. */
const SMALL_BODY_BYTES = 4096;

const storable = (max: number) =>
  z.string().min(1).max(max).refine(isStorableText, "contains U+0000 or a lone surrogate");
const attemptFields = {
  // A bigint as decimal text, as the envelope carries it (JSON numbers lose digits past 2^53).
  fencing_token: z.string().regex(/^[0-9]{1,20}$/, "a decimal string, as in the envelope"),
  worker_id: storable(200),
  // The envelope's run_at, optional: it only spares Postgres a look at every partition.
  run_at: z
    .string()
    .transform((s) => s.toUpperCase())
    .pipe(z.iso.datetime({ offset: true }))
    .meta({ format: "date-time" })
    .optional(),
};
// The bodies, exported for the OpenAPI document and the typed client (openapi/).
export const ExecutionLeaseRequest = z
  .strictObject({
    ...attemptFields,
    lease_ms: z.number().int().min(1000).max(3_600_000).default(DEFAULT_EXECUTION_LEASE_MS),
  })
  .meta({
    id: "ExecutionLeaseRequest",
    description: "start and heartbeat: the attempt and its lease.",
  });
export const ExecutionCompleteRequest = z
  .strictObject({ ...attemptFields, result: z.unknown().optional() })
  .meta({ id: "ExecutionCompleteRequest" });
export const ExecutionInterruptRequest = z
  .strictObject({ ...attemptFields, message: storable(4096).optional() })
  .meta({ id: "ExecutionInterruptRequest" });
export const ExecutionFailRequest = z
  .strictObject({
    ...attemptFields,
    error: z.strictObject({
      message: storable(4096),
      code: storable(100).optional(),
      retryable: z.boolean().default(true),
      details: z.unknown().optional(),
    }),
  })
  .meta({ id: "ExecutionFailRequest" });
/** The replay body: empty, or {} (no options yet). */
export const ReplayRequest = z.strictObject({}).meta({ id: "ReplayRequest" });

export function executionRoutes(deps: ExecutionRouteDeps, admitting: Admitting): Route[] {
  const route = (
    action: string,
    maxBodyBytes: number,
    handle: (principal: Principal, taskId: string, body: unknown) => Promise<HttpReply>,
  ): Route => ({
    method: "post",
    pattern: `/v1/executions/:id/${action}`,
    name: `POST /v1/executions/{id}/${action}`,
    maxBodyBytes,
    admit: (request) =>
      admitting(maxBodyBytes, 1, (principal, raw) =>
        handle(principal, request.params[0] ?? "", parseJson(raw)),
      )(request),
  });
  const refOf = (
    principal: Principal,
    taskId: string,
    body: { fencing_token: string; run_at?: string | undefined },
  ): ExecutionRef => ({
    tenantId: principal.tenantId,
    taskId,
    fencingToken: body.fencing_token,
    ...(body.run_at !== undefined && { runAtMs: Date.parse(body.run_at) }),
  });

  return [
    route("start", SMALL_BODY_BYTES, async (principal, taskId, input) => {
      const body = parse(ExecutionLeaseRequest, input);
      const outcome = await deps.executions.start(
        refOf(principal, taskId, body),
        body.worker_id,
        body.lease_ms,
        deps.nowMs(),
      );
      if (outcome.kind === "not_due") throw notDue(taskId, outcome.dueInMs);
      if (outcome.kind !== "started") throw refusal(outcome.kind, taskId);
      const { execution } = outcome;
      return json(200, {
        task_id: taskId,
        status: "RUNNING",
        attempt: execution.attempt,
        max_attempts: execution.maxAttempts,
        run_at: iso(execution.runAtMs),
        timeout_ms: execution.timeoutMs,
        lease_expires_at: iso(execution.leaseExpiresAtMs),
      });
    }),
    route("heartbeat", SMALL_BODY_BYTES, async (principal, taskId, input) => {
      const body = parse(ExecutionLeaseRequest, input);
      const outcome = await deps.executions.heartbeat(
        refOf(principal, taskId, body),
        body.worker_id,
        body.lease_ms,
        deps.nowMs(),
      );
      if (outcome.kind !== "extended") throw refusal(outcome.kind, taskId);
      return json(200, {
        task_id: taskId,
        status: "RUNNING",
        lease_expires_at: iso(outcome.leaseExpiresAtMs),
      });
    }),
    route("complete", deps.maxBodyBytes, async (principal, taskId, input) => {
      const body = parse(ExecutionCompleteRequest, input);
      const resultJson = storableJson(body.result ?? null, "result", principal);
      const outcome = await deps.executions.complete(
        refOf(principal, taskId, body),
        resultJson,
        deps.nowMs(),
      );
      if (outcome.kind !== "completed") throw refusal(outcome.kind, taskId);
      return json(200, { task_id: taskId, status: "COMPLETED" });
    }),
    route("fail", deps.maxBodyBytes, async (principal, taskId, input) => {
      const body = parse(ExecutionFailRequest, input);
      const reported: ExecutionFailure = {
        message: body.error.message,
        retryable: body.error.retryable,
        ...(body.error.code !== undefined && { code: body.error.code }),
      };
      if (body.error.details !== undefined) {
        storableJson(body.error.details, "error.details", principal);
        reported.details = body.error.details;
      }
      const outcome = await deps.executions.fail(
        refOf(principal, taskId, body),
        reported,
        deps.nowMs(),
      );
      return json(200, presentFailure(taskId, outcome));
    }),
    // The worker is stopping: the task is due again at once and the attempt is given back.
    route("interrupt", SMALL_BODY_BYTES, async (principal, taskId, input) => {
      const body = parse(ExecutionInterruptRequest, input);
      const outcome = await deps.executions.interrupt(
        refOf(principal, taskId, body),
        workerStoppingFailure(body.message),
        deps.nowMs(),
      );
      return json(200, presentFailure(taskId, outcome));
    }),
    {
      method: "post",
      pattern: "/v1/tasks/:id/replay",
      name: "POST /v1/tasks/{id}/replay",
      maxBodyBytes: SMALL_BODY_BYTES,
      admit: (request) =>
        admitting(SMALL_BODY_BYTES, 1, async (principal, raw) => {
          // No options yet: an empty body or {} (anything else is refused, not ignored).
          if (raw.length > 0) parse(ReplayRequest, parseJson(raw));
          return replay(deps, principal, request.params[0] ?? "");
        })(request),
    },
  ];
}

async function replay(
  deps: ExecutionRouteDeps,
  principal: Principal,
  taskId: string,
): Promise<HttpReply> {
  const outcome = await deps.executions.replay(
    principal.tenantId,
    taskId,
    principal.apiKeyId,
    deps.nowMs(),
  );
  if (outcome.kind === "not_found") throw refusal("not_found", taskId);
  if (outcome.kind === "workflow_node") {
    throw new ChronofenceError(
      ErrorCode.InvalidTransition,
      "a DEAD workflow node cannot be replayed: its death already decided its children and its workflow; submit a new workflow",
      { details: { task_id: taskId, workflow_id: outcome.workflowId } },
    );
  }
  if (outcome.kind === "not_dead") {
    throw new ChronofenceError(
      ErrorCode.InvalidTransition,
      `a ${outcome.status} task cannot be replayed; only DEAD tasks can`,
      { details: { task_id: taskId, status: outcome.status } },
    );
  }
  return json(200, await deps.presentTask(principal, taskId));
}

function presentFailure(taskId: string, outcome: FailOutcome): Record<string, unknown> {
  switch (outcome.kind) {
    case "retrying":
      return {
        task_id: taskId,
        status: "SCHEDULED",
        attempt: outcome.attempt,
        next_run_at: iso(outcome.nextRunAtMs),
      };
    case "dead":
      return {
        task_id: taskId,
        status: "DEAD",
        attempt: outcome.attempt,
        dead_letter_id: outcome.deadLetterId,
      };
    case "cancelled":
      return { task_id: taskId, status: "CANCELLED", attempt: outcome.attempt };
    default:
      throw refusal(outcome.kind, taskId);
  }
}

function refusal(kind: "stale" | "not_found", taskId: string): ChronofenceError {
  const details = { task_id: taskId.slice(0, 64) };
  if (kind === "not_found") {
    return new ChronofenceError(ErrorCode.NotFound, "task not found", { details });
  }
  return new ChronofenceError(
    ErrorCode.InvalidTransition,
    "stale fencing token: this attempt is no longer the task's current one, or the task moved on",
    { details: { ...details, reason: "stale_fencing_token" } },
  );
}

/** The task is not due yet by the database's clock: nothing changed; start again after due_in_ms. */
function notDue(taskId: string, dueInMs: number): ChronofenceError {
  return new ChronofenceError(
    ErrorCode.InvalidTransition,
    "the task is not due yet (by the database's clock): start it again after details.due_in_ms",
    { details: { task_id: taskId.slice(0, 64), reason: "not_due", due_in_ms: dueInMs } },
  );
}

function parse<T extends z.ZodType>(schema: T, input: unknown): z.infer<T> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw new ChronofenceError(ErrorCode.InvalidRequest, "invalid request body", {
    details: {
      issues: parsed.error.issues.slice(0, 10).map((issue) => ({
        path: issue.path.map(String).join("."),
        message: issue.message,
      })),
    },
  });
}

/** JSON a worker sends back (a result, failure details): jsonb-storable and within the tenant's payload limit. */
function storableJson(value: unknown, field: string, principal: Principal): string {
  const problem = findJsonProblem(value, MAX_PAYLOAD_DEPTH);
  if (problem) {
    throw new ChronofenceError(ErrorCode.Unprocessable, `${field} violates ${problem.rule}`, {
      details: { field, ...problem },
    });
  }
  const text = JSON.stringify(value);
  if (storedJsonBytes(text) > principal.limits.maxPayloadBytes) {
    throw new ChronofenceError(ErrorCode.PayloadTooLarge, `${field} too large`, {
      details: { field, max_bytes: principal.limits.maxPayloadBytes },
    });
  }
  return text;
}

const iso = (epochMs: number): string => new Date(epochMs).toISOString();
