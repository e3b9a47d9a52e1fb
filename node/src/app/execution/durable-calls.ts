/**
 * The executor's calls to the execution store, repeated while Postgres is
 * unavailable: a start, an outcome or a hand back must reach Postgres or be
 * left, on purpose, to the reconciler. Each waits between tries, doubling
 * from `retryMs` up to 2 s, and gives up when the worker stops (Abandoned:
 * the offset stays uncommitted). A permanent error ends the message
 * (Unrecorded): the reconciler recovers the task (re-arm or lease expiry).
 * So does a statement cancelled at its timeout `maxTimeouts` times in a row
 * (Postgres is up, and this statement too slow or blocked), and a call still
 * failing after `maxRetries` retries.
 */
import { ChronofenceError, ErrorCode, STATEMENT_TIMEOUT } from "../../domain/errors.js";
import type { WorkerMetrics } from "../../ports/worker-metrics.js";
import { sleep } from "./lease-keeper.js";

/** The worker stopped before the call succeeded: nothing is durable. */
export class Abandoned extends Error {}
/** Postgres refused the call for good (its cause says why). */
export class Unrecorded extends Error {}

/** How long a call keeps being asked (unbounded where absent). */
export interface RetryBounds {
  maxTimeouts?: number;
  maxRetries?: number;
}
const UNBOUNDED: RetryBounds = {};

export interface DurableCallsDeps {
  /** The first wait before asking Postgres again; doubles up to 2 s. */
  retryMs: number;
  /** Aborts when the worker stops: no more waiting. */
  stopping: AbortSignal;
  metrics: Pick<WorkerMetrics, "dependencyRetry">;
  onError: (error: unknown, what: string) => void;
}

export class DurableCalls {
  constructor(private readonly deps: DurableCallsDeps) {}

  /**
   * `fn`'s answer once Postgres gives one. The first try is the call's own
   * promise, the loop only begins after a failure: an async function around
   * every call was about 0.4 KB of garbage per call, two calls per task
   * (bench/RESULTS.md, session 36).
   */
  call<T>(what: string, fn: () => Promise<T>, bounds: RetryBounds = UNBOUNDED): Promise<T> {
    let first: Promise<T>;
    try {
      first = fn();
    } catch (error) {
      first = Promise.reject(error); // a call that throws at once fails as one that rejects
    }
    return first.catch((error: unknown) => this.retry(what, fn, bounds, error));
  }

  private async retry<T>(
    what: string,
    fn: () => Promise<T>,
    bounds: RetryBounds,
    firstError: unknown,
  ): Promise<T> {
    const maxTimeouts = bounds.maxTimeouts ?? Number.POSITIVE_INFINITY;
    const maxRetries = bounds.maxRetries ?? Number.POSITIVE_INFINITY;
    let waitMs = this.deps.retryMs;
    let timeouts = 0;
    let failure = firstError;
    for (let retries = 0; ; retries++) {
      const error = failure;
      const unavailable = error instanceof ChronofenceError && error.code === ErrorCode.Unavailable;
      timeouts = unavailable && error.details?.reason === STATEMENT_TIMEOUT ? timeouts + 1 : 0;
      const transient = unavailable && timeouts < maxTimeouts && retries < maxRetries;
      if (!transient) {
        if (!isRefusedValue(error)) this.deps.onError(error, what);
        throw new Unrecorded(what, { cause: error });
      }
      this.deps.metrics.dependencyRetry(`postgres_${what}`);
      if (this.deps.stopping.aborted) throw new Abandoned();
      await sleep(waitMs, this.deps.stopping);
      waitMs = Math.min(waitMs * 2, 2000);
      try {
        return await fn();
      } catch (next) {
        failure = next;
      }
    }
  }
}

/** Postgres refused a value the call carried (e.g. a NUL character in a jsonb result). */
export const isRefusedValue = (error: unknown): boolean =>
  error instanceof ChronofenceError && error.code === ErrorCode.Unprocessable;
