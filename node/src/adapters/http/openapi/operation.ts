/**
 * How one route is described: the vocabulary of the operation tables
 * (task-operations.ts, other-operations.ts). Each entry is keyed by the
 * route's `name` (`GET /v1/tasks/{id}`, the metrics label), which is also
 * its OpenAPI method and path; document.ts turns the entries into OpenAPI
 * 3.1 and coverage() checks them against the routes the server serves.
 */
import type { z } from "zod";

export type Tag =
  | "tasks"
  | "executions"
  | "workflows"
  | "schedules"
  | "dashboard"
  | "operations"
  | "reference";

export interface QueryParameter {
  name: string;
  description: string;
  schema: z.ZodType;
}

export interface Answer {
  description: string;
  /** A JSON body (application/json), as this zod schema's output. */
  schema?: z.ZodType;
  /** Any other body: its media type (text/html, text/plain, ...), or the types it can be; a string. */
  contentType?: string | readonly string[];
  /** Response headers worth naming, with what they say. */
  headers?: Record<string, string>;
}

export interface Operation {
  operationId: string;
  tag: Tag;
  summary: string;
  description?: string;
  /** False for the routes without an API key (health, metrics, the reference). */
  authenticated: boolean;
  /** The bearer token, when it is not a tenant's API key: the operator's (CF_ADMIN_TOKEN). */
  credential?: "operatorToken";
  /** One description per `{param}` of the path. */
  pathParameters?: Record<string, string>;
  query?: QueryParameter[];
  /** The JSON request body, as this zod schema's input: the schema that validates it. */
  body?: { schema: z.ZodType; required: boolean; description?: string };
  /** Successful answers by status. */
  ok: Record<number, Answer>;
  /** Error statuses this route can answer (each with the Error body). */
  errors: readonly number[];
  /** What a status means here, where ERROR_MEANINGS would say it wrong. */
  errorMeanings?: Readonly<Record<number, string>>;
}

/**
 * The query parameters of a route that validates its query with `schema`
 * (an object of one schema per parameter, as app/dashboard/query-params.ts
 * builds them): each parameter is described by its own validating schema.
 */
export function queryOf<S extends z.ZodObject>(
  schema: S,
  descriptions: { readonly [K in keyof S["shape"] & string]: string },
): QueryParameter[] {
  return Object.entries(schema.shape).map(([name, field]) => ({
    name,
    description: descriptions[name as keyof S["shape"] & string],
    schema: field as z.ZodType,
  }));
}

/** What each error status means, for every operation that lists it. */
export const ERROR_MEANINGS: Readonly<Record<number, string>> = {
  400: "Malformed: not JSON, an unknown field, a wrong JSON type, a bad query parameter (invalid_request, invalid_json).",
  401: "Missing, unknown or revoked API key (unauthorized).",
  404: "Unknown, or another tenant's (not_found).",
  405: "Method not allowed on this path (method_not_allowed).",
  408: "The request body did not arrive in time (request_timeout).",
  409: "Conflict: idempotency key reused with another request, a name taken, or a state that refuses the call (idempotency_conflict, name_taken, invalid_transition).",
  413: "Body or payload larger than allowed (payload_too_large).",
  422: "Well-formed but breaks a rule: a range, an enum, the horizon, a graph rule (unprocessable).",
  429: "The tenant's rate limit (rate_limited); retry after Retry-After seconds.",
  503: "A dependency is down or slow (unavailable); retryable.",
};

/** Statuses any authenticated JSON route can answer besides its own. */
export const COMMON_ERRORS = [401, 503] as const;
