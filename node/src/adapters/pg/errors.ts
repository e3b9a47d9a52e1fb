/**
 * How Postgres failures become Chronofence errors. Retryable means "the same
 * request may succeed later, unchanged": the HTTP layer answers 503 and the
 * client retries (with its idempotency key).
 */
import { ChronofenceError, ErrorCode, STATEMENT_TIMEOUT } from "../../domain/errors.js";

/** SQLSTATEs safe to retry (cf. graphile-worker): transient by nature. */
export const RETRYABLE_SQLSTATES: ReadonlyMap<string, string> = new Map([
  ["40001", "serialization_failure"],
  ["40P01", "deadlock_detected"],
  ["55P03", "lock_not_available"],
  ["57014", "query_canceled (statement_timeout)"],
  ["57P01", "admin_shutdown"],
  ["57P02", "crash_shutdown"],
  ["57P03", "cannot_connect_now"],
  ["53300", "too_many_connections"],
  ["53400", "configuration_limit_exceeded"],
  ["08000", "connection_exception"],
  ["08003", "connection_does_not_exist"],
  ["08006", "connection_failure"],
  ["08001", "sqlclient_unable_to_establish_sqlconnection"],
  ["08004", "sqlserver_rejected_establishment_of_sqlconnection"],
]);

/** Node-side failures talking to Postgres: also transient. */
const RETRYABLE_MESSAGES = [
  /timeout/i,
  /ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH/,
  /Connection terminated/i,
  /Client has encountered a connection error/i,
  /Cannot use a pool after calling end/i,
];

export function isRetryablePgError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && RETRYABLE_SQLSTATES.has(code)) return true;
  if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return true; // socket errno
  return RETRYABLE_MESSAGES.some((re) => re.test(error.message));
}

/**
 * SQLSTATE class 22, data exception: Postgres refused a value the request
 * carried (a NUL in jsonb, an out-of-range number, bad text encoding).
 * Validation should have refused it first; this is the backstop, and it is
 * permanent for that request, so a 422, not a 500 or a retry.
 */
export const isDataException = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.length === 5 && code.startsWith("22");
};

/**
 * Wraps any Postgres failure: retryable ones as Unavailable, data exceptions
 * as Unprocessable, the rest as Internal.
 */
export function fromPgError(error: unknown, operation: string): ChronofenceError {
  if (error instanceof ChronofenceError) return error;
  if (isDataException(error)) {
    const sqlstate = (error as { code: string }).code;
    return new ChronofenceError(
      ErrorCode.Unprocessable,
      `postgres refused a value during ${operation}`,
      {
        details: { rule: "data_exception", sqlstate },
        cause: error,
      },
    );
  }
  if (isRetryablePgError(error)) {
    // Postgres answered but cancelled the statement: up, yet too slow (or blocked) for this one.
    const timedOut = (error as { code?: unknown }).code === "57014";
    return new ChronofenceError(ErrorCode.Unavailable, `postgres unavailable during ${operation}`, {
      cause: error,
      ...(timedOut ? { details: { reason: STATEMENT_TIMEOUT } } : {}),
    });
  }
  return new ChronofenceError(ErrorCode.Internal, `postgres error during ${operation}`, {
    cause: error,
  });
}
