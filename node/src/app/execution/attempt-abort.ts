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
 */
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

  /** Calls `handler` and settles as it does, or rejects as soon as the attempt is aborted. */
  race<T>(handler: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.why !== null) {
        reject(errorOf(this.why));
        return;
      }
      this.rejectRun = reject;
      Promise.resolve(handler()).then(resolve, reject);
    });
  }
}

/** The signal's reason: the handler sees "lost_lease" for both ways of losing the lease. */
const errorOf = (reason: AbortReason): Error =>
  new Error(reason === "stale" || reason === "deadline" ? "lost_lease" : reason);
