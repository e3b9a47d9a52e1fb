/**
 * The one error the client throws. An answer of the API carries its HTTP
 * status and the stable `code` of its `{"error":{"code","message","details"}}`
 * body (docs/api.md, "Errors"). No answer at all (refused connection, DNS,
 * the client's own timeout) has status 0 and code `unreachable` or `timeout`.
 */
export class ChronofenceApiError extends Error {
  constructor(
    /** The HTTP status; 0 when the API did not answer. */
    readonly status: number,
    /** The API's error code (`not_found`, `rate_limited`, ...), or `unreachable` / `timeout`. */
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "ChronofenceApiError";
  }
}

/** The error of an answer that is not 2xx, from its body when it has the API's shape. */
export function errorOfAnswer(status: number, text: string): ChronofenceApiError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } })
    ?.error;
  if (error && typeof error.code === "string") {
    const message = typeof error.message === "string" ? error.message : error.code;
    const details =
      error.details !== null && typeof error.details === "object"
        ? (error.details as Record<string, unknown>)
        : {};
    return new ChronofenceApiError(status, error.code, message, details);
  }
  return new ChronofenceApiError(status, `http_${status}`, text.slice(0, 200) || `HTTP ${status}`);
}
