/**
 * Cron schedules as stored, and validation of `POST /v1/schedules` and
 * `PATCH /v1/schedules/{id}` bodies. As for tasks, two layers: shape
 * (400 invalid_request: unknown field, wrong JSON type) and rules
 * (422 unprocessable: bad cron, unknown time zone, ranges).
 */
import { z } from "zod";
import { CronSchedule, validTimeZone } from "./cron.js";
import { ChronofenceError, ErrorCode } from "./errors.js";
import { findJsonProblem, storedJsonBytes } from "./json-limits.js";
import { RETRY_LIMITS, resolveRetryPolicy } from "./retry-defaults.js";
import { fnv1a32, HOT_SHARD_COUNT } from "./shard.js";
import { MAX_PAYLOAD_DEPTH, TASK_TYPE_PATTERN } from "./submission.js";
import { BACKOFF_STRATEGIES, type BackoffPolicy, PRIORITIES, type Priority } from "./task.js";
import type { TenantLimits } from "./tenant.js";

export const MISFIRE_POLICIES = ["skip", "fire_once", "fire_all"] as const;
export type MisfirePolicy = (typeof MISFIRE_POLICIES)[number];
export const OVERLAP_POLICIES = ["allow", "skip", "buffer_one"] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

export const SCHEDULE_NAME_PATTERN = /^[A-Za-z0-9._:/ -]{1,200}$/;
const DAY_MS = 86_400_000;
export const MAX_JITTER_MS = 3_600_000;

/** What a user sets on a schedule (times in ms, payload as JSON text). */
export interface ScheduleSpec {
  name: string;
  expression: string;
  timeZone: string;
  type: string;
  payloadJson: string;
  priority: Priority;
  maxAttempts: number;
  timeoutMs: number;
  backoff: BackoffPolicy;
  misfirePolicy: MisfirePolicy;
  overlapPolicy: OverlapPolicy;
  jitterMs: number;
  /** Dead man's switch: an occurrence not COMPLETED this long after its run_at alerts. */
  expectWithinMs: number | null;
  paused: boolean;
}

export interface Schedule extends ScheduleSpec {
  id: string;
  tenantId: string;
  payload: unknown;
  /** Bumped by every change; the planner's writes name the version they planned from. */
  version: number;
  /** Every occurrence at or before this instant has been decided (planned, skipped, missed). */
  plannedThroughMs: number;
  /** The first occurrence after plannedThroughMs (null: the expression never fires again). */
  nextOccurrenceMs: number | null;
  createdAtMs: number;
  updatedAtMs: number;
}

/** Planning is split by `plan:<shard>` leases, as many shards as the hot tier has. */
export const planShardOf = (scheduleId: string): number => fnv1a32(scheduleId) % HOT_SHARD_COUNT;

/**
 * Fields whose change re-plans the occurrences not yet started (they are
 * cancelled and planned again): when they fire and what their tasks carry.
 */
export const REPLAN_FIELDS = [
  "expression",
  "timeZone",
  "jitterMs",
  "type",
  "payloadJson",
  "priority",
  "maxAttempts",
  "timeoutMs",
  "backoff",
] as const satisfies ReadonlyArray<keyof ScheduleSpec>;

const backoffShape = z
  .strictObject({
    strategy: z.string().optional(),
    base_ms: z.number().optional(),
    max_ms: z.number().optional(),
  })
  .optional();

const shapeFields = {
  name: z.string(),
  expression: z.string(),
  time_zone: z.string().optional(),
  type: z.string(),
  payload: z.unknown().optional(),
  priority: z.string().optional(),
  max_attempts: z.number().optional(),
  timeout_ms: z.number().optional(),
  backoff: backoffShape,
  misfire_policy: z.string().optional(),
  overlap_policy: z.string().optional(),
  jitter_ms: z.number().optional(),
  expect_within_ms: z.number().nullable().optional(),
  paused: z.boolean().optional(),
};
const createShape = z.strictObject(shapeFields);
const patchShape = z.strictObject({
  ...shapeFields,
  name: z.string().optional(),
  expression: z.string().optional(),
  type: z.string().optional(),
});

const int = (min: number, max: number) => z.number().int().min(min).max(max);
const limit = (key: keyof typeof RETRY_LIMITS) => int(RETRY_LIMITS[key].min, RETRY_LIMITS[key].max);
const ruleFields = {
  name: z.string().regex(SCHEDULE_NAME_PATTERN, "1-200 letters, digits, spaces and . _ : / -"),
  type: z.string().regex(TASK_TYPE_PATTERN, "1-128 letters, digits and . _ : / -"),
  priority: z.enum(PRIORITIES),
  max_attempts: limit("maxAttempts"),
  timeout_ms: int(1, DAY_MS),
  // Fields a backoff leaves out come from the tenant's defaults, then the global ones.
  // Strict as the shape is (which refuses unknown keys first, 400): the same rule, documented.
  backoff: z.strictObject({
    strategy: z.enum(BACKOFF_STRATEGIES).optional(),
    base_ms: limit("backoffBaseMs").optional(),
    max_ms: limit("backoffMaxMs").optional(),
  }),
  misfire_policy: z.enum(MISFIRE_POLICIES),
  overlap_policy: z.enum(OVERLAP_POLICIES),
  jitter_ms: int(0, MAX_JITTER_MS),
  expect_within_ms: int(1, 30 * DAY_MS).nullable(),
};
const ruleObject = z.object(ruleFields).partial();

/**
 * A schedule as the API documents it (OpenAPI, the typed client): the field
 * rules above, unknown fields refused. The cron expression and the time
 * zone are checked by CronSchedule (5 or 6 fields or an alias, an IANA
 * zone); the tenant's payload limit and retry defaults apply on top.
 */
const documentedFields = {
  ...ruleFields,
  expression: z.string().describe('Cron: 5 or 6 fields, or an alias such as "@daily".'),
  time_zone: z.string().describe("IANA time zone of the expression (default UTC)."),
  payload: z.unknown(),
  paused: z.boolean(),
};
export const ScheduleCreate = z
  .strictObject(documentedFields)
  .partial()
  .required({ name: true, expression: true, type: true })
  .meta({ id: "ScheduleCreate", description: "A cron schedule to create." });
export const SchedulePatch = z.strictObject(documentedFields).partial().meta({
  id: "SchedulePatch",
  description: "The fields to change (at least one); a backoff replaces the whole object.",
});

export const SCHEDULE_DEFAULTS = {
  timeZone: "UTC",
  priority: "standard" as Priority,
  timeoutMs: 30_000,
  misfirePolicy: "fire_once" as MisfirePolicy,
  overlapPolicy: "allow" as OverlapPolicy,
  jitterMs: 0,
};

/** A validated patch: only the fields given (payload re-serialised). */
export type SchedulePatch = Partial<ScheduleSpec>;

export interface ValidatedSchedule {
  spec: ScheduleSpec;
  payload: unknown;
}

/** What of its tenant a schedule's validation reads. */
export type ScheduleTenant = Pick<TenantLimits, "maxPayloadBytes" | "retryDefaults">;

/** Validates a create body against its tenant's payload limit and retry defaults. */
export function validateScheduleCreate(input: unknown, tenant: ScheduleTenant): ValidatedSchedule {
  const shaped = createShape.safeParse(input);
  if (!shaped.success) throw malformed(shaped.error);
  const patch = checkRules(shaped.data, tenant);
  const retry = resolveRetryPolicy({ maxAttempts: patch.maxAttempts }, tenant.retryDefaults);
  if (!retry.ok) throw backoffConflict(retry.message);
  const payload = shaped.data.payload ?? null;
  const spec: ScheduleSpec = {
    name: patch.name!,
    expression: patch.expression!,
    timeZone: patch.timeZone ?? SCHEDULE_DEFAULTS.timeZone,
    type: patch.type!,
    payloadJson: patch.payloadJson ?? "null",
    priority: patch.priority ?? SCHEDULE_DEFAULTS.priority,
    maxAttempts: retry.policy.maxAttempts,
    timeoutMs: patch.timeoutMs ?? SCHEDULE_DEFAULTS.timeoutMs,
    backoff: patch.backoff ?? retry.policy.backoff,
    misfirePolicy: patch.misfirePolicy ?? SCHEDULE_DEFAULTS.misfirePolicy,
    overlapPolicy: patch.overlapPolicy ?? SCHEDULE_DEFAULTS.overlapPolicy,
    jitterMs: patch.jitterMs ?? SCHEDULE_DEFAULTS.jitterMs,
    expectWithinMs: patch.expectWithinMs ?? null,
    paused: patch.paused ?? false,
  };
  // The zone is validated even when it is the default.
  spec.timeZone = CronSchedule.parse(spec.expression, spec.timeZone).zone;
  return { spec, payload };
}

/**
 * Validates a PATCH body on its own: every rule but the pairing of a new
 * expression with the stored zone (or a new zone with the stored
 * expression). Run before the schedule is locked, so a refused PATCH costs
 * no connection and no row lock (concurrent bad PATCHes of one schedule
 * would otherwise queue on its lock until Postgres' timeout, 503).
 */
export function validateSchedulePatchAlone(input: unknown, tenant: ScheduleTenant): void {
  const { patch } = shapePatch(input, tenant);
  if (patch.expression !== undefined) CronSchedule.parse(patch.expression, "UTC");
  if (patch.timeZone !== undefined) validTimeZone(patch.timeZone);
}

/** Validates a PATCH body against the stored schedule (for expression/zone consistency). */
export function validateSchedulePatch(
  input: unknown,
  current: Pick<ScheduleSpec, "expression" | "timeZone">,
  tenant: ScheduleTenant,
): { patch: SchedulePatch; payload?: unknown } {
  const { patch, shaped } = shapePatch(input, tenant);
  if (patch.expression !== undefined || patch.timeZone !== undefined) {
    const parsed = CronSchedule.parse(
      patch.expression ?? current.expression,
      patch.timeZone ?? current.timeZone,
    );
    if (patch.timeZone !== undefined) patch.timeZone = parsed.zone;
  }
  return "payload" in shaped.data ? { patch, payload: shaped.data.payload ?? null } : { patch };
}

type Shaped = z.infer<typeof patchShape>;

function shapePatch(input: unknown, tenant: ScheduleTenant) {
  const shaped = patchShape.safeParse(input);
  if (!shaped.success) throw malformed(shaped.error);
  if (Object.keys(shaped.data).length === 0) {
    throw new ChronofenceError(ErrorCode.Unprocessable, "a PATCH must change at least one field");
  }
  return { patch: checkRules(shaped.data, tenant), shaped };
}

function checkRules(body: Shaped, tenant: ScheduleTenant): SchedulePatch {
  const checked = ruleObject.safeParse(body);
  if (!checked.success) {
    throw new ChronofenceError(ErrorCode.Unprocessable, "invalid schedule", {
      details: { issues: issuesOf(checked.error) },
    });
  }
  const r = checked.data;
  const patch: SchedulePatch = {};
  if (r.name !== undefined) patch.name = r.name;
  if (body.expression !== undefined) patch.expression = body.expression.trim();
  if (body.time_zone !== undefined) patch.timeZone = body.time_zone;
  if (r.type !== undefined) patch.type = r.type;
  if ("payload" in body)
    patch.payloadJson = serialisePayload(body.payload ?? null, tenant.maxPayloadBytes);
  if (r.priority !== undefined) patch.priority = r.priority;
  if (r.max_attempts !== undefined) patch.maxAttempts = r.max_attempts;
  if (r.timeout_ms !== undefined) patch.timeoutMs = r.timeout_ms;
  if (r.backoff !== undefined) {
    // A backoff replaces the whole object: what it leaves out is a default, not the old value.
    const backoff = {
      strategy: r.backoff.strategy,
      baseMs: r.backoff.base_ms,
      maxMs: r.backoff.max_ms,
    };
    const retry = resolveRetryPolicy({ backoff }, tenant.retryDefaults);
    if (!retry.ok) throw backoffConflict(retry.message);
    patch.backoff = retry.policy.backoff;
  }
  if (r.misfire_policy !== undefined) patch.misfirePolicy = r.misfire_policy;
  if (r.overlap_policy !== undefined) patch.overlapPolicy = r.overlap_policy;
  if (r.jitter_ms !== undefined) patch.jitterMs = r.jitter_ms;
  if (r.expect_within_ms !== undefined) patch.expectWithinMs = r.expect_within_ms;
  if (body.paused !== undefined) patch.paused = body.paused;
  return patch;
}

function backoffConflict(message: string): ChronofenceError {
  return new ChronofenceError(ErrorCode.Unprocessable, "invalid schedule", {
    details: { issues: [{ path: "backoff.base_ms", message }] },
  });
}

function serialisePayload(payload: unknown, maxPayloadBytes: number): string {
  const problem = findJsonProblem(payload, MAX_PAYLOAD_DEPTH);
  if (problem) {
    throw new ChronofenceError(ErrorCode.Unprocessable, `payload violates ${problem.rule}`, {
      details: { field: "payload", ...problem },
    });
  }
  const json = JSON.stringify(payload);
  if (storedJsonBytes(json) > maxPayloadBytes) {
    throw new ChronofenceError(ErrorCode.PayloadTooLarge, "payload too large as stored", {
      details: { max_payload_bytes: maxPayloadBytes },
    });
  }
  return json;
}

function malformed(error: z.ZodError): ChronofenceError {
  return new ChronofenceError(ErrorCode.InvalidRequest, "malformed schedule", {
    details: { issues: issuesOf(error) },
  });
}

function issuesOf(error: z.ZodError): Array<{ path: string; message: string }> {
  return error.issues.slice(0, 10).map((issue) => ({
    path: issue.path.map(String).join("."),
    message: issue.message,
  }));
}
