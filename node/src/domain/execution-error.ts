/**
 * How a handler's failure becomes the failure a worker reports
 * (ports/execution-store.ts ExecutionFailure). Retryable unless the handler
 * says otherwise: most failures in a scheduler's world are transient
 * (a dependency down, a timeout), and a wrong "retryable" costs a few
 * attempts while a wrong "permanent" loses the task to the dead letters.
 *
 * Non-retryable: a PermanentError, any error with `retryable === false`, a
 * task type no handler is registered for (every worker of the group sees the
 * same registry, so retrying cannot help).
 */

const MAX_MESSAGE_CHARS = 2000;

/** Thrown by a handler to say "retrying cannot help" (bad input, a refusal). */
export class PermanentError extends Error {
  readonly retryable = false;
  readonly code: string | undefined;
  constructor(message: string, options?: { cause?: unknown; code?: string }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "PermanentError";
    this.code = options?.code;
  }
}

/** A failure as stored in last_error and dead_letters. */
export interface FailureInfo {
  message: string;
  code?: string;
  retryable: boolean;
  details?: unknown;
}

export const unknownTypeFailure = (type: string): FailureInfo => ({
  message: `no handler is registered for task type ${JSON.stringify(type)}`,
  code: "unknown_type",
  retryable: false,
});

/** An attempt its worker stopped before it finished (retried at once, the attempt given back). */
export const workerStoppingFailure = (
  message = "the worker stopped before the attempt finished",
): FailureInfo => ({ message, code: "worker_stopping", retryable: true });

export const timeoutFailure = (timeoutMs: number): FailureInfo => ({
  message: `the handler did not finish within timeout_ms = ${timeoutMs}`,
  code: "timeout",
  retryable: true,
});

/** Classifies whatever a handler threw (it may throw anything, not only Errors). */
export function classifyFailure(thrown: unknown): FailureInfo {
  if (!(thrown instanceof Error)) {
    return { message: truncate(safeString(thrown)), code: "non_error_thrown", retryable: true };
  }
  const { retryable, code } = thrown as { retryable?: unknown; code?: unknown };
  const info: FailureInfo = {
    message: truncate(thrown.message || thrown.name),
    retryable: retryable !== false,
  };
  if (typeof code === "string" || typeof code === "number") info.code = String(code);
  else if (thrown.name !== "Error") info.code = thrown.name;
  return info;
}

const truncate = (text: string): string =>
  text.length <= MAX_MESSAGE_CHARS ? text : `${text.slice(0, MAX_MESSAGE_CHARS)}…`;

function safeString(value: unknown): string {
  try {
    return typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    return String(value);
  }
}
