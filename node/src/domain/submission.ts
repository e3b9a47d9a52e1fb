/**
 * Validation of task submissions (docs/architecture.md section 8). Two layers, two statuses:
 *  - shape (400 invalid_request): not an object, unknown field, missing `type`,
 *    a field of the wrong JSON type;
 *  - rules (422 unprocessable): right type, unacceptable value — ranges,
 *    enums, RFC 3339, both `run_at` and `delay_ms`, the horizon.
 * A `run_at` in the past means "due now" and is stored as now.
 */
import { z } from "zod";
import { canonicalJson } from "./canonical-json.js";
import { ChronofenceError, ErrorCode } from "./errors.js";
import { findJsonProblem, storedJsonBytes } from "./json-limits.js";
import {
  RETRY_LIMITS,
  type RetryPolicy,
  resolveRetryPolicy,
  type TenantRetryDefaults,
} from "./retry-defaults.js";
import { BACKOFF_STRATEGIES, PRIORITIES, type TaskDraft } from "./task.js";

export const MAX_BATCH_TASKS = 1000;
export const MAX_PAYLOAD_DEPTH = 32;
/** What a task `type` may be; list filters use it too. */
export const TASK_TYPE_PATTERN = /^[A-Za-z0-9._:/-]{1,128}$/;

/**
 * The most body bytes a request of `tasks` tasks can need, for a tenant whose
 * payloads are at most `maxPayloadBytes` (as stored): the payload
 * four times over (pretty-printing, `\uXXXX` escapes as Python's json.dumps
 * writes them) plus 4 KiB for the other fields. The server stops reading a
 * body beyond this (413), so a tenant with small payloads cannot be made to
 * buffer megabytes.
 */
export const bodyAllowanceBytes = (maxPayloadBytes: number, tasks: number): number =>
  tasks * (4 * maxPayloadBytes + 4096);

const shape = z.strictObject({
  type: z.string(),
  payload: z.unknown().optional(),
  run_at: z.string().optional(),
  delay_ms: z.number().optional(),
  priority: z.string().optional(),
  idempotency_key: z.string().optional(),
  max_attempts: z.number().optional(),
  timeout_ms: z.number().optional(),
  backoff: z
    .strictObject({
      strategy: z.string().optional(),
      base_ms: z.number().optional(),
      max_ms: z.number().optional(),
    })
    .optional(),
});

const DAY_MS = 86_400_000;
const int = (min: number, max: number) => z.number().int().min(min).max(max);
const limit = (key: keyof typeof RETRY_LIMITS) => int(RETRY_LIMITS[key].min, RETRY_LIMITS[key].max);

/**
 * The rule of each field (422 when broken). `rules` validates with them, and
 * TaskSubmission (below) documents them: one definition of each rule.
 */
const ruleFields = {
  type: z
    .string()
    .min(1)
    .max(128)
    .regex(TASK_TYPE_PATTERN, "letters, digits and . _ : / - only")
    .describe("The handler that runs the task."),
  // RFC 3339 (section 5.6) allows a lowercase `t` and `z`; zod wants them uppercase.
  run_at: z
    .string()
    .transform((text) => text.toUpperCase())
    .pipe(z.iso.datetime({ offset: true }))
    .meta({ format: "date-time", description: "When to run (RFC 3339); in the past means now." })
    .optional(),
  delay_ms: int(0, Number.MAX_SAFE_INTEGER)
    .describe("Run this many ms from now (instead of run_at).")
    .optional(),
  priority: z.enum(PRIORITIES).default("standard"),
  idempotency_key: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x21-\x7e]+$/, "printable ASCII without spaces")
    .describe("The same key and request answer the original task (200); another request, 409.")
    .optional(),
  // Absent retry fields come from the tenant's defaults, then the global ones.
  max_attempts: limit("maxAttempts").optional(),
  timeout_ms: int(1, DAY_MS).default(30_000),
  // Strict as the shape is (which refuses unknown keys first, 400): the same rule, documented.
  backoff: z
    .strictObject({
      strategy: z.enum(BACKOFF_STRATEGIES).optional(),
      base_ms: limit("backoffBaseMs").optional(),
      max_ms: limit("backoffMaxMs").optional(),
    })
    .optional(),
};
const oneInstant = {
  check: (s: { run_at?: unknown; delay_ms?: unknown }) =>
    s.run_at === undefined || s.delay_ms === undefined,
  params: { message: "give run_at or delay_ms, not both", path: ["run_at"] },
};
const rules = z.object(ruleFields).refine(oneInstant.check, oneInstant.params);

/**
 * The submission's fields with their rules, as a workflow node reuses them
 * (a node has no idempotency key).
 */
export const TASK_SUBMISSION_FIELDS = { ...ruleFields, payload: z.unknown().optional() };

/**
 * A task submission as the API documents it (the OpenAPI document, the
 * typed client's `z.input`): the field rules above, unknown fields refused,
 * `payload` any JSON. What it cannot say is checked on top: the tenant's
 * payload limit and retry defaults, the horizon, JSON depth.
 */
export const TaskSubmission = z
  .strictObject(TASK_SUBMISSION_FIELDS)
  .refine(oneInstant.check, oneInstant.params)
  .meta({ id: "TaskSubmission", description: "A task to submit." });

/** `POST /v1/tasks/batch`: 1 to MAX_BATCH_TASKS submissions, one commit. */
export const TaskBatchSubmission = z
  .strictObject({ tasks: z.array(TaskSubmission).min(1).max(MAX_BATCH_TASKS) })
  .meta({ id: "TaskBatchSubmission" });

export interface SubmissionContext {
  tenantId: string;
  nowMs: number;
  horizonMs: number;
  maxPayloadBytes: number;
  /** The tenant's max_attempts and backoff defaults. */
  retryDefaults: TenantRetryDefaults;
  newTaskId: () => string;
}

export interface ValidatedSubmission {
  draft: TaskDraft;
  /** The parsed payload (the draft holds it serialised). */
  payload: unknown;
  /**
   * Canonical request text, whose hash detects idempotency-key reuse with
   * another body: the request after defaults, with sorted keys (see
   * canonicalRequestOf). Null without an idempotency key (nothing to compare).
   */
  canonicalRequest: string | null;
}

/** Validates one submission; `index` names the item of a batch in error details. */
export function validateSubmission(
  input: unknown,
  ctx: SubmissionContext,
  index?: number,
): ValidatedSubmission {
  const at = index === undefined ? {} : { index };
  const { fields: s, payload } = parseSubmission(input, at);
  const retry = resolveRetry(s, ctx, at);
  const payloadJson = serialisePayload(payload, ctx, at);
  const runAtMs = resolveRunAtMs(s.run_at, s.delay_ms, ctx, at);
  return {
    canonicalRequest:
      s.idempotency_key === undefined ? null : canonicalRequestOf(s, retry, payload),
    draft: {
      id: ctx.newTaskId(),
      tenantId: ctx.tenantId,
      type: s.type,
      payloadJson,
      priority: s.priority,
      runAtMs,
      maxAttempts: retry.maxAttempts,
      timeoutMs: s.timeout_ms,
      backoff: retry.backoff,
      idempotencyKey: s.idempotency_key ?? null,
      createdAtMs: ctx.nowMs,
    },
    payload,
  };
}

/** The two layers, for the test that holds TaskSubmission to them (parseSubmission relies on it). */
export const submissionLayers = { shape, rules };

/**
 * One zod pass for a valid submission: TaskSubmission accepts exactly what
 * `shape` and then `rules` accept. Only a refused one is parsed again, by
 * the two layers, to tell a malformed task (400) from an invalid one (422).
 */
function parseSubmission(
  input: unknown,
  at: Record<string, unknown>,
): { fields: z.infer<typeof rules>; payload: unknown } {
  const valid = TaskSubmission.safeParse(input);
  if (valid.success) return { fields: valid.data, payload: valid.data.payload ?? null };
  const shaped = shape.safeParse(input);
  if (!shaped.success) {
    throw new ChronofenceError(ErrorCode.InvalidRequest, "malformed task", {
      details: { ...at, issues: issuesOf(shaped.error) },
    });
  }
  const checked = rules.safeParse(shaped.data);
  if (!checked.success) {
    throw new ChronofenceError(ErrorCode.Unprocessable, "invalid task", {
      details: { ...at, issues: issuesOf(checked.error) },
    });
  }
  return { fields: checked.data, payload: shaped.data.payload ?? null };
}

/**
 * The request as it will be executed, so that two bodies which mean the same
 * compare equal: defaults filled in (the tenant's retry defaults too; an explicit `"priority":"standard"` is
 * the same request as none), `run_at` as its instant (`…Z` = `…+00:00`), a
 * missing `run_at`/`delay_ms` as `delay_ms: 0`, and object keys sorted at
 * every level (RFC 8785 order). Called after the payload passed
 * findJsonProblem, so its depth is bounded.
 */
function canonicalRequestOf(
  s: z.infer<typeof rules>,
  retry: RetryPolicy,
  payload: unknown,
): string {
  const when =
    s.run_at !== undefined ? { run_at_ms: Date.parse(s.run_at) } : { delay_ms: s.delay_ms ?? 0 };
  return canonicalJson({
    type: s.type,
    payload,
    ...when,
    priority: s.priority,
    idempotency_key: s.idempotency_key,
    max_attempts: retry.maxAttempts,
    timeout_ms: s.timeout_ms,
    backoff: {
      strategy: retry.backoff.strategy,
      base_ms: retry.backoff.baseMs,
      max_ms: retry.backoff.maxMs,
    },
  });
}

/**
 * The batch's envelope alone; its items are validated one by one. Built once:
 * zod compiles a schema on its first parse, and building this one per
 * request cost about 50 µs of CPU each (a microbenchmark of 50-task bodies,
 * bench/RESULTS.md session 26).
 */
const BatchEnvelope = z.strictObject({ tasks: z.array(z.unknown()) });

/** Validates the envelope of `POST /v1/tasks/batch`, returning its items. */
export function validateBatchEnvelope(input: unknown): unknown[] {
  const shaped = BatchEnvelope.safeParse(input);
  if (!shaped.success) {
    throw new ChronofenceError(ErrorCode.InvalidRequest, 'expected {"tasks": [...]}', {
      details: { issues: issuesOf(shaped.error) },
    });
  }
  const count = shaped.data.tasks.length;
  if (count === 0 || count > MAX_BATCH_TASKS) {
    throw new ChronofenceError(
      ErrorCode.Unprocessable,
      `a batch holds 1 to ${MAX_BATCH_TASKS} tasks, got ${count}`,
      { details: { rule: "batch_size", count } },
    );
  }
  return shaped.data.tasks;
}

function resolveRetry(
  s: z.infer<typeof rules>,
  ctx: SubmissionContext,
  at: Record<string, unknown>,
): RetryPolicy {
  const requested = {
    maxAttempts: s.max_attempts,
    backoff: s.backoff && {
      strategy: s.backoff.strategy,
      baseMs: s.backoff.base_ms,
      maxMs: s.backoff.max_ms,
    },
  };
  const resolved = resolveRetryPolicy(requested, ctx.retryDefaults);
  if (resolved.ok) return resolved.policy;
  throw new ChronofenceError(ErrorCode.Unprocessable, "invalid task", {
    details: { ...at, issues: [{ path: "backoff.base_ms", message: resolved.message }] },
  });
}

function serialisePayload(
  payload: unknown,
  ctx: SubmissionContext,
  at: Record<string, unknown>,
): string {
  const problem = findJsonProblem(payload, MAX_PAYLOAD_DEPTH);
  if (problem) {
    throw new ChronofenceError(ErrorCode.Unprocessable, `payload violates ${problem.rule}`, {
      details: { ...at, field: "payload", ...problem },
    });
  }
  const json = JSON.stringify(payload);
  // What is stored and sent (jsonb prints numbers in full), not what was received.
  const storedBytes = storedJsonBytes(json);
  if (storedBytes > ctx.maxPayloadBytes) {
    throw new ChronofenceError(ErrorCode.PayloadTooLarge, "payload too large as stored", {
      details: { ...at, max_payload_bytes: ctx.maxPayloadBytes, stored_bytes: storedBytes },
    });
  }
  return json;
}

function resolveRunAtMs(
  runAt: string | undefined,
  delayMs: number | undefined,
  ctx: SubmissionContext,
  at: Record<string, unknown>,
): number {
  const requestedMs = runAt !== undefined ? Date.parse(runAt) : ctx.nowMs + (delayMs ?? 0);
  if (!Number.isFinite(requestedMs)) {
    throw new ChronofenceError(ErrorCode.Unprocessable, "run_at is not a valid instant", {
      details: { ...at, field: "run_at" },
    });
  }
  if (requestedMs - ctx.nowMs > ctx.horizonMs) {
    throw new ChronofenceError(ErrorCode.Unprocessable, "run_at is beyond the scheduling horizon", {
      details: { ...at, rule: "horizon_exceeded", horizon_ms: ctx.horizonMs },
    });
  }
  return Math.max(requestedMs, ctx.nowMs);
}

function issuesOf(error: z.ZodError): Array<{ path: string; message: string }> {
  return error.issues.slice(0, 10).map((issue) => ({
    path: issue.path.map(String).join("."),
    message: issue.message,
  }));
}
