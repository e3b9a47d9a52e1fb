/**
 * Errors with stable codes. Every error Chronofence raises on purpose is a
 * ChronofenceError; its `code` is part of the public contract (HTTP bodies,
 * logs, metrics) and never changes meaning. Adapters map codes to transport
 * statuses; the domain does not know about HTTP.
 */
export const ErrorCode = {
  /** The request is not well-formed (bad JSON, wrong types, unknown fields). Permanent. */
  InvalidRequest: "invalid_request",
  /** The body is not valid UTF-8 or not valid JSON. Permanent. */
  InvalidJson: "invalid_json",
  /** Well-formed but semantically invalid (range, horizon, conflicting fields). Permanent. */
  Unprocessable: "unprocessable",
  /** Missing, unknown or revoked API key. */
  Unauthorized: "unauthorized",
  /** A valid API key without the scope the route requires (domain/scopes.ts). */
  Forbidden: "forbidden",
  /** Unknown, or belongs to another tenant (the two are indistinguishable on purpose). */
  NotFound: "not_found",
  /** The idempotency key was used before with a different request body. Permanent. */
  IdempotencyConflict: "idempotency_conflict",
  /** The name is taken by another resource of the tenant (e.g. a schedule name). */
  NameTaken: "name_taken",
  /** The task is in a state that does not allow the operation (e.g. cancel a running task). */
  InvalidTransition: "invalid_transition",
  /** The body or a task payload is larger than allowed. Permanent for that body. */
  PayloadTooLarge: "payload_too_large",
  /** The tenant's token bucket is empty. Retryable after `retryAfterMs`. */
  RateLimited: "rate_limited",
  /** The client did not finish sending its request in time. */
  RequestTimeout: "request_timeout",
  /** A dependency (Postgres, Redis) is down, slow or overloaded. Retryable. */
  Unavailable: "unavailable",
  /** The route does not exist. */
  RouteNotFound: "route_not_found",
  /** The method is not allowed on this route. */
  MethodNotAllowed: "method_not_allowed",
  /** A bug. Never expected; logged with its cause. */
  Internal: "internal",
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * `details.reason` of an Unavailable error for a statement the database
 * cancelled at its timeout: the database is up, and this statement too slow
 * or blocked; trying it again forever may never succeed.
 */
export const STATEMENT_TIMEOUT = "statement_timeout";

export interface ErrorOptions {
  details?: Record<string, unknown>;
  cause?: unknown;
}

/** The one base class: a stable code, a human message, optional details and cause. */
export class ChronofenceError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ChronofenceError";
    this.code = code;
    this.details = options.details;
  }
}

/** Raised by the rate limiters (a tenant's tasks, an address's failed authentications); carries when the caller may retry. */
export class RateLimitedError extends ChronofenceError {
  constructor(
    readonly retryAfterMs: number,
    readonly limitTasks: number,
    readonly remainingTasks: number,
    message = "rate limit exceeded",
  ) {
    super(ErrorCode.RateLimited, message, { details: { retry_after_ms: retryAfterMs } });
  }
}

export const isChronofenceError = (error: unknown): error is ChronofenceError =>
  error instanceof ChronofenceError;
