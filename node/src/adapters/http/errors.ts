import { ChronofenceError, ErrorCode, RateLimitedError } from "../../domain/errors.js";

/** The one place error codes become HTTP statuses (docs/architecture.md section 8). */
export const STATUS_OF_CODE: Readonly<Record<ErrorCode, number>> = {
  [ErrorCode.InvalidRequest]: 400,
  [ErrorCode.InvalidJson]: 400,
  [ErrorCode.Unprocessable]: 422,
  [ErrorCode.Unauthorized]: 401,
  [ErrorCode.Forbidden]: 403,
  [ErrorCode.NotFound]: 404,
  [ErrorCode.IdempotencyConflict]: 409,
  [ErrorCode.NameTaken]: 409,
  [ErrorCode.InvalidTransition]: 409,
  [ErrorCode.PayloadTooLarge]: 413,
  [ErrorCode.RateLimited]: 429,
  [ErrorCode.RequestTimeout]: 408,
  [ErrorCode.Unavailable]: 503,
  [ErrorCode.RouteNotFound]: 404,
  [ErrorCode.MethodNotAllowed]: 405,
  [ErrorCode.Internal]: 500,
};

export interface ErrorResponse {
  status: number;
  headers: Array<[string, string]>;
  body: string;
}

/** Renders any thrown value as `{"error":{"code","message","details"}}`; bugs become 500. */
export function errorResponse(error: unknown): ErrorResponse {
  const known =
    error instanceof ChronofenceError
      ? error
      : new ChronofenceError(ErrorCode.Internal, "internal error", { cause: error });
  const headers: Array<[string, string]> = [];
  if (known instanceof RateLimitedError) {
    const retryAfterS = Number.isFinite(known.retryAfterMs)
      ? Math.max(1, Math.ceil(known.retryAfterMs / 1000))
      : 3600;
    headers.push(
      ["Retry-After", String(retryAfterS)],
      ["RateLimit-Limit", String(known.limitTasks)],
      ["RateLimit-Remaining", String(known.remainingTasks)],
      ["RateLimit-Reset", String(retryAfterS)],
    );
  }
  const body = JSON.stringify({
    error: { code: known.code, message: known.message, details: known.details ?? {} },
  });
  return { status: STATUS_OF_CODE[known.code], headers, body };
}
