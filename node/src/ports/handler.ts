/**
 * What a task handler is: `type` → async (payload, ctx) → result (any JSON).
 * A handler that throws fails the attempt (retryable unless it throws a
 * PermanentError or an error with `retryable: false`); one that does not
 * settle within the task's timeout_ms fails it with code "timeout" — its
 * `ctx.signal` aborts then, and a handler should stop its work when it does.
 */
export interface HandlerContext {
  taskId: string;
  tenantId: string;
  type: string;
  /** 1 for the first run. */
  attempt: number;
  maxAttempts: number;
  /** Send it with any side effect so the receiver can refuse a stale attempt. */
  fencingToken: string;
  idempotencyKey: string | null;
  runAtMs: number;
  timeoutMs: number;
  /** A workflow node's COMPLETED parents' results by node key ({} for a root); null outside workflows. */
  parentResults: Readonly<Record<string, unknown>> | null;
  /** Aborts at timeout_ms, when the execution lease is lost, or when the worker stops. */
  signal: AbortSignal;
}

export type Handler = (payload: unknown, ctx: HandlerContext) => Promise<unknown>;

/** Handlers by task type: what handler modules register into, what the executor looks up. */
export interface HandlerRegistry {
  /** Throws if `type` already has a handler. */
  register(type: string, handler: Handler): this;
  get(type: string): Handler | undefined;
  types(): string[];
}
