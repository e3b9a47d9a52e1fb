/**
 * Why one running attempt stops before its handler settles, and what its
 * handler sees of that: the first reason wins; the handler's `ctx.signal`
 * aborts with it, and the attempt's run (`race`) rejects at once, whether
 * or not the handler heeds its signal.
 *
 * The AbortController behind the signal is made only when a handler reads
 * `ctx.signal`: most short handlers never do, and a controller, its signal
 * and its listeners were the largest part of the garbage the worker made per
 * task (bench/RESULTS.md, session 10).
 *
 * The handler's ctx is an AttemptContext, whose `signal` is a getter of its
 * class: an object literal with a getter of its own is built by the runtime
 * in dictionary mode, about 1 KB a task where a class instance takes about a
 * tenth of that (bench/RESULTS.md, session 36). Nothing here makes a closure
 * per attempt but the one promise `race` must be able to reject.
 */
import type { Handler, HandlerContext } from "../../ports/handler.js";

export type AbortReason = "timeout" | "stale" | "deadline" | "stop";

export class AttemptAbort {
  /** The first reason given, or null while the attempt may run on. */
  why: AbortReason | null = null;
  private controller: AbortController | null = null;
  private rejectRun: ((error: Error) => void) | null = null;

  /** The handler's signal: already aborted if the attempt was. */
  get signal(): AbortSignal {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.why !== null) this.controller.abort(errorOf(this.why));
    }
    return this.controller.signal;
  }

  abort(reason: AbortReason): void {
    if (this.why !== null) return;
    this.why = reason;
    if (this.controller === null && this.rejectRun === null) return;
    const error = errorOf(reason);
    this.controller?.abort(error);
    this.rejectRun?.(error);
  }

  /** Runs the handler and settles as it does, or rejects as soon as the attempt is aborted. */
  race(handler: Handler, payload: unknown, ctx: HandlerContext): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      if (this.why !== null) {
        reject(errorOf(this.why));
        return;
      }
      this.rejectRun = reject;
      Promise.resolve(handler(payload, ctx)).then(resolve, reject);
    });
  }
}

/** Aborts the attempt at its timeout_ms (a setTimeout callback: no closure per attempt). */
export const abortAtTimeout = (attempt: AttemptAbort): void => attempt.abort("timeout");

/** What a handler is told of its attempt; `signal` is its attempt's, made when first read. */
export class AttemptContext implements HandlerContext {
  // An ES private field: not a property, so a copy of the context (`{ ...ctx }`) carries the
  // task's fields only.
  readonly #abort: AttemptAbort;

  constructor(
    readonly taskId: string,
    readonly tenantId: string,
    readonly type: string,
    readonly attempt: number,
    readonly maxAttempts: number,
    readonly fencingToken: string,
    readonly idempotencyKey: string | null,
    readonly runAtMs: number,
    readonly timeoutMs: number,
    readonly parentResults: Readonly<Record<string, unknown>> | null,
    abort: AttemptAbort,
  ) {
    this.#abort = abort;
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }
}

/** The signal's reason: the handler sees "lost_lease" for both ways of losing the lease. */
const errorOf = (reason: AbortReason): Error =>
  new Error(reason === "stale" || reason === "deadline" ? "lost_lease" : reason);
