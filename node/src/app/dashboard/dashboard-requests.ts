/**
 * What the dashboard routes accept, as zod schemas: the query of each list
 * and of the upcoming fires, and the watchdog's alert report. The use cases
 * validate with them (dashboard-queries.ts, schedule-insight.ts), the
 * OpenAPI document describes the routes with them (query parameters and
 * the body as each schema's input: openapi/dashboard-operations.ts), and
 * the typed client's AlertReport is the body's `z.input`: one definition
 * of each rule (docs/dashboard.md, "API").
 */
import { z } from "zod";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import { TASK_TYPE_PATTERN } from "../../domain/submission.js";
import { PRIORITIES, TASK_STATUSES } from "../../domain/task.js";
import { isUuid } from "../../domain/uuid.js";
import { blankIsAbsent, enumQuery, instantQuery, intQuery, uuidQuery } from "./query-params.js";

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 500;

const limit = () => intQuery(1, MAX_LIMIT, DEFAULT_LIMIT);

/** GET /v1/tasks/search. */
export const TaskSearchQuery = z.object({
  status: enumQuery(TASK_STATUSES),
  type: blankIsAbsent(z.string().regex(TASK_TYPE_PATTERN)),
  priority: enumQuery(PRIORITIES),
  run_at_from: instantQuery(),
  run_at_to: instantQuery(),
  id: uuidQuery(),
  // The rule of a submission's idempotency_key: no other key can exist.
  idempotency_key: blankIsAbsent(z.string().regex(/^[\x21-\x7e]{1,255}$/)),
  cursor: uuidQuery(),
  limit: limit(),
});

/** The dead letters' cursor, `<dead_at ms>~<id>` of the last row of a page (dashboard-queries.ts). */
const deadLetterCursor = z.string().transform((text, ctx) => {
  const [ms, id] = text.split("~");
  const deadAtMs = Number(ms);
  if (Number.isFinite(deadAtMs) && id !== undefined && isUuid(id)) return { deadAtMs, id };
  ctx.addIssue({ code: "custom", message: "not a cursor of this list" });
  return z.NEVER;
});

/** GET /v1/dead-letters. */
export const DeadLetterListQuery = z.object({
  open: enumQuery(["true", "false"]),
  cursor: blankIsAbsent(deadLetterCursor),
  limit: limit(),
});

/** GET /v1/workflows. */
export const WorkflowListQuery = z.object({ cursor: uuidQuery(), limit: limit() });

export const MAX_UPCOMING = 50;
/** GET /v1/schedules/{id}/upcoming. */
export const UpcomingQuery = z.object({ count: intQuery(1, MAX_UPCOMING, 5) });

const text = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[^\0]*$/, "contains U+0000");
export const MAX_ALERT_DETAILS_CHARS = 16_384;

/** POST /v1/watchdog/alerts: one alert's transition, as the watchdog reports it. */
export const AlertReportRequest = z
  .strictObject({
    key: text(200).describe("The alert's name, unique per tenant (`canary`, `schedule:<id>`)."),
    kind: z.enum(["canary", "dead_mans_switch"]),
    state: z.enum(["firing", "resolved"]),
    message: text(4096),
    details: z
      .record(z.string(), z.unknown())
      .nullish()
      .transform((details) => details ?? {})
      .refine(
        (details) => JSON.stringify(details).length <= MAX_ALERT_DETAILS_CHARS,
        `at most ${MAX_ALERT_DETAILS_CHARS} characters of JSON`,
      )
      .describe("Any JSON object, at most 16 KiB as JSON; absent or null is {}."),
  })
  .meta({ id: "AlertReport", description: "An alert's transition, firing or resolved." });

export type AlertReportBody = z.output<typeof AlertReportRequest>;

/** The body parsed by `schema`: 400 invalid_request with the first issues otherwise. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body);
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
