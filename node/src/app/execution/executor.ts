/**
 * Runs one envelope through the fenced execution protocol (docs/architecture.md
 * section 6, step 9):
 *
 *   start (fenced ARMED → RUNNING; 0 rows ⇒ stale: skip, count)
 *     → handler(payload, ctx), with the execution lease renewed every
 *       heartbeatMs and ctx.signal aborted at timeout_ms
 *     → complete(result) | fail(error)  (fenced; stale ⇒ count, change nothing)
 *
 * `execute` resolves once the outcome is durable in Postgres (or there was
 * nothing to do): only then may the caller commit the message's offset.
 * While Postgres is unreachable it keeps retrying the same call; a worker
 * that stops in the middle answers "abandoned" and the offset stays
 * uncommitted (the message comes back, or the reconciler fails the attempt
 * once its lease expires). A handler still running when the worker stops
 * (`stop()`, after its drain timeout) is aborted and its attempt recorded as
 * interrupted — fenced, retried at once, the attempt given back — so the task
 * runs again elsewhere without waiting for its lease; "interrupted" is durable,
 * so its offset may be committed.
 */

import { setMaxListeners } from "node:events";
import { ChronofenceError, ErrorCode, STATEMENT_TIMEOUT } from "../../domain/errors.js";
import {
  classifyFailure,
  type FailureInfo,
  PermanentError,
  timeoutFailure,
  unknownTypeFailure,
  workerStoppingFailure,
} from "../../domain/execution-error.js";
import type { InboundEnvelope } from "../../domain/inbound-envelope.js";
import { storedJsonBytes } from "../../domain/json-limits.js";
import type { Clock } from "../../ports/clock.js";
import type {
  CompleteOutcome,
  ExecutionRef,
  FailOutcome,
  StartedExecution,
} from "../../ports/execution-store.js";
import type { HandlerRegistry } from "../../ports/handler.js";
import type { WorkerMetrics } from "../../ports/worker-metrics.js";
import type { ExecutionService } from "./execution-service.js";

export interface ExecutorDeps {
  /** The fenced transitions and their hot-tier follow-ups (retries, released nodes). */
  executions: ExecutionService;
  handlers: HandlerRegistry;
  clock: Clock;
  metrics: WorkerMetrics;
  onError: (error: unknown, what: string) => void;
}

export interface ExecutorOptions {
  workerId: string;
  leaseMs: number;
  heartbeatMs: number;
  /** First wait before asking Postgres again; doubles up to 2 s. */
  dependencyRetryMs: number;
  maxResultBytes: number;
}

/**
 * What happened to one envelope. "abandoned": the worker stopped before the
 * outcome was durable (do not commit the offset). "unrecorded": Postgres
 * refused a call for good (a bug, logged); committing is right, the
 * reconciler recovers the task.
 */
export type ExecutionReport =
  | "completed"
  | "retrying"
  | "interrupted"
  | "dead"
  | "cancelled"
  | "stale"
  | "lost_lease"
  | "abandoned"
  | "unrecorded";

class Abandoned extends Error {}
class Unrecorded extends Error {}

/**
 * A start cancelled at the statement timeout this many times in a row is left
 * to the reconciler (re-armed after the dispatch timeout): retrying it for
 * ever would hold its slot and its partition's commit point until the
 * queue's fetch stops. Outcomes are retried for ever: an outcome given up
 * would let the lease expire, and a handler that succeeded run again.
 */
const MAX_START_TIMEOUTS = 5;

const STOPPED = workerStoppingFailure(
  "the worker stopped before the attempt finished (its drain timeout passed)",
);

export class Executor {
  private readonly stopping = new AbortController();
  private draining = false;

  constructor(
    private readonly deps: ExecutorDeps,
    private readonly options: ExecutorOptions,
  ) {
    // Every running task listens for the stop (and removes its listener when done):
    // as many listeners as the queue's concurrency is expected, not a leak.
    setMaxListeners(0, this.stopping.signal);
  }

  /** From now on, envelopes not yet started are left alone ("abandoned"); running ones go on. */
  drain(): void {
    this.draining = true;
  }

  /**
   * From now on, waits for Postgres give up and running handlers see their
   * signal abort; their attempts are recorded as interrupted (one try each).
   */
  stop(): void {
    this.draining = true;
    this.stopping.abort(new Error("worker stopping"));
  }

  async execute(envelope: InboundEnvelope, queue: string): Promise<ExecutionReport> {
    const ref: ExecutionRef = {
      tenantId: envelope.tenantId,
      taskId: envelope.taskId,
      fencingToken: envelope.fencingToken,
      runAtMs: envelope.runAtMs,
      dispatchedAtMs: envelope.dispatchedAtMs,
    };
    if (this.draining) return "abandoned";
    try {
      const nowMs = this.deps.clock.nowMs();
      const start = await this.durably(
        "start",
        () => this.deps.executions.start(ref, this.options.workerId, this.options.leaseMs, nowMs),
        MAX_START_TIMEOUTS,
      );
      if (start.kind !== "started") {
        this.deps.metrics.staleToken("start");
        this.deps.metrics.outcome(envelope.type, "stale");
        return "stale";
      }
      this.deps.metrics.started(queue, nowMs - start.execution.runAtMs);
      this.deps.metrics.inFlight(envelope.tenantId, 1);
      try {
        return await this.runStarted(envelope, ref, start.execution);
      } finally {
        this.deps.metrics.inFlight(envelope.tenantId, -1);
      }
    } catch (error) {
      if (error instanceof Abandoned) return "abandoned";
      if (error instanceof Unrecorded) return "unrecorded";
      throw error;
    }
  }

  private async runStarted(
    envelope: InboundEnvelope,
    ref: ExecutionRef,
    execution: StartedExecution,
  ): Promise<ExecutionReport> {
    const run = await this.runHandler(envelope, ref, execution);
    if (run.kind === "lost_lease") {
      this.deps.metrics.staleToken("heartbeat");
      this.deps.metrics.outcome(envelope.type, "lost_lease");
      return "lost_lease";
    }
    const nowMs = this.deps.clock.nowMs();
    if (this.stopping.signal.aborted && run.kind === "failed" && run.byStop) {
      // Not the task's fault: it runs again at once, on another worker, without
      // waiting for the lease. If Postgres is down, Abandoned: the lease it is.
      const interrupted = await this.durably("interrupt", () =>
        this.deps.executions.interrupt(ref, STOPPED, nowMs),
      );
      return this.afterFailure(envelope.type, interrupted, "interrupted");
    }
    let failure: FailureInfo;
    if (run.kind === "succeeded") {
      const done: CompleteOutcome | Error = await this.durably("complete", () =>
        this.deps.executions.complete(ref, run.resultJson, nowMs),
      ).catch((error: Error) => error);
      if (!(done instanceof Error)) {
        if (done.kind !== "completed") return this.stale(envelope.type, "complete");
        this.deps.metrics.outcome(envelope.type, "completed");
        return "completed";
      }
      if (!(done instanceof Unrecorded && isRefusedValue(done.cause))) throw done;
      failure = {
        message: "Postgres refused the handler's result",
        code: "result_refused",
        retryable: false,
      };
    } else {
      failure = run.failure;
    }
    const failed = await this.durably("fail", () => this.deps.executions.fail(ref, failure, nowMs));
    return this.afterFailure(envelope.type, failed, "retrying");
  }

  /** After a durable fail or interrupt (its hot-tier follow-ups are the service's): metrics. */
  private afterFailure(
    type: string,
    failed: FailOutcome,
    retrying: "retrying" | "interrupted",
  ): ExecutionReport {
    if (failed.kind === "retrying") {
      this.deps.metrics.retried(type);
      this.deps.metrics.outcome(type, retrying);
      return retrying;
    }
    if (failed.kind === "cancelled") {
      this.deps.metrics.outcome(type, "cancelled");
      return "cancelled";
    }
    if (failed.kind === "dead") {
      this.deps.metrics.deadLettered(type);
      this.deps.metrics.outcome(type, "dead");
      return "dead";
    }
    return this.stale(type, retrying === "interrupted" ? "interrupt" : "fail");
  }

  private stale(type: string, at: "complete" | "fail" | "interrupt"): ExecutionReport {
    this.deps.metrics.staleToken(at);
    this.deps.metrics.outcome(type, "stale");
    return "stale";
  }

  /** Runs the handler under its timeout and the lease heartbeat. Never throws. */
  private async runHandler(
    envelope: InboundEnvelope,
    ref: ExecutionRef,
    execution: StartedExecution,
  ): Promise<
    | { kind: "succeeded"; resultJson: string }
    | { kind: "failed"; failure: FailureInfo; byStop: boolean }
    | { kind: "lost_lease" }
  > {
    const handler = this.deps.handlers.get(envelope.type);
    if (!handler)
      return { kind: "failed", failure: unknownTypeFailure(envelope.type), byStop: false };
    let parentResults: Record<string, unknown> | null = null;
    if (envelope.workflowId !== null) {
      try {
        parentResults = await this.deps.executions.parentResults(
          envelope.tenantId,
          envelope.taskId,
        );
      } catch (error) {
        return { kind: "failed", failure: classifyFailure(error), byStop: false };
      }
    }
    const controller = new AbortController();
    let why: "timeout" | "lost_lease" | "stop" | null = null;
    const abort = (reason: "timeout" | "lost_lease" | "stop") => {
      why ??= reason;
      controller.abort(new Error(reason));
    };
    const timeout = setTimeout(() => abort("timeout"), execution.timeoutMs);
    const onStop = () => abort("stop");
    this.stopping.signal.addEventListener("abort", onStop, { once: true });
    // A start that resolved after the stop: the listener above will never fire.
    if (this.stopping.signal.aborted) onStop();
    const heartbeat = setInterval(() => {
      const nowMs = this.deps.clock.nowMs();
      this.deps.executions.heartbeat(ref, this.options.workerId, this.options.leaseMs, nowMs).then(
        (answer) => {
          if (answer.kind !== "extended") abort("lost_lease");
        },
        (error: unknown) => this.deps.onError(error, "heartbeat"), // the next beat tries again
      );
    }, this.options.heartbeatMs);
    const startedMs = this.deps.clock.monotonicMs();
    try {
      const aborted = new Promise<never>((_, reject) => {
        if (controller.signal.aborted) reject(controller.signal.reason);
        else
          controller.signal.addEventListener("abort", () => reject(controller.signal.reason), {
            once: true,
          });
      });
      const result = await Promise.race([
        handler(envelope.payload, {
          taskId: envelope.taskId,
          tenantId: envelope.tenantId,
          type: envelope.type,
          attempt: execution.attempt,
          maxAttempts: execution.maxAttempts,
          fencingToken: envelope.fencingToken,
          idempotencyKey: envelope.idempotencyKey,
          runAtMs: execution.runAtMs,
          timeoutMs: execution.timeoutMs,
          parentResults,
          signal: controller.signal,
        }),
        aborted,
      ]);
      if (why === "lost_lease") return { kind: "lost_lease" };
      return { kind: "succeeded", resultJson: this.resultJsonOf(result) };
    } catch (error) {
      if (why === "lost_lease") return { kind: "lost_lease" };
      if (why === "timeout") {
        return { kind: "failed", failure: timeoutFailure(execution.timeoutMs), byStop: false };
      }
      return { kind: "failed", failure: classifyFailure(error), byStop: why === "stop" };
    } finally {
      clearTimeout(timeout);
      clearInterval(heartbeat);
      this.stopping.signal.removeEventListener("abort", onStop);
      this.deps.metrics.ran(envelope.type, this.deps.clock.monotonicMs() - startedMs);
    }
  }

  private resultJsonOf(result: unknown): string {
    let json: string | undefined;
    try {
      json = JSON.stringify(result === undefined ? null : result);
    } catch (error) {
      throw new PermanentError("the handler's result is not JSON", {
        cause: error,
        code: "result_not_json",
      });
    }
    if (json === undefined) return "null"; // a function or symbol: no result
    if (storedJsonBytes(json) > this.options.maxResultBytes) {
      throw new PermanentError(
        `the handler's result is larger than ${this.options.maxResultBytes} bytes`,
        { code: "result_too_large" },
      );
    }
    return json;
  }

  /**
   * Repeats a store call while Postgres is unavailable; gives up only when
   * the worker stops (Abandoned). A permanent error ends the message
   * (Unrecorded): the reconciler recovers the task (re-arm or lease expiry).
   * So does a statement cancelled at its timeout `maxTimeouts` times in a row
   * (Postgres is up, and this statement too slow or blocked).
   */
  private async durably<T>(
    what: string,
    call: () => Promise<T>,
    maxTimeouts = Number.POSITIVE_INFINITY,
  ): Promise<T> {
    let waitMs = this.options.dependencyRetryMs;
    let timeouts = 0;
    for (;;) {
      try {
        return await call();
      } catch (error) {
        const unavailable =
          error instanceof ChronofenceError && error.code === ErrorCode.Unavailable;
        timeouts = unavailable && error.details?.reason === STATEMENT_TIMEOUT ? timeouts + 1 : 0;
        const transient = unavailable && timeouts < maxTimeouts;
        if (!transient) {
          if (!isRefusedValue(error)) this.deps.onError(error, what);
          throw new Unrecorded(what, { cause: error });
        }
        this.deps.metrics.dependencyRetry(`postgres_${what}`);
        if (this.stopping.signal.aborted) throw new Abandoned();
        await sleep(waitMs, this.stopping.signal);
        waitMs = Math.min(waitMs * 2, 2000);
      }
    }
  }
}

/** Postgres refused a value the call carried (e.g. a NUL character in a jsonb result). */
const isRefusedValue = (error: unknown): boolean =>
  error instanceof ChronofenceError && error.code === ErrorCode.Unprocessable;

/** Resolves after `ms`, or at once when `signal` aborts; leaves no listener on the long-lived signal. */
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
