/**
 * Runs one envelope through the fenced execution protocol (docs/architecture.md
 * section 6, step 9):
 *
 *   start (fenced ARMED → RUNNING, only once due by the database's clock;
 *          0 rows ⇒ stale: skip, count; not due ⇒ "not_due", ask again then)
 *     → no handler for the type? hand it back (due again later for another
 *       worker, the attempt given back; DEAD after unknownType.deadAfterMs)
 *     → handler(payload, ctx), with the execution lease renewed every
 *       heartbeatMs and ctx.signal aborted at timeout_ms
 *     → complete(result) | fail(error)  (fenced; stale ⇒ count, change nothing)
 *
 * Ground rules of the lease, as the worker keeps them:
 *  - A start or heartbeat dates the lease from the instant it is sent (the
 *    clock is read for each try, never once before a retry loop).
 *  - The worker trusts the lease locally until `sent + leaseMs − margin` on
 *    its monotonic clock, counted from the last start or heartbeat that
 *    succeeded. If no heartbeat lands before then (Postgres down, frozen or
 *    too slow), the handler's signal aborts and the worker stops acting for
 *    that token: no outcome is sent ("lost_lease"), the reconciler fails the
 *    attempt once the lease expires in Postgres and the task runs again. The
 *    margin covers the gap between this clock and the reconciler's.
 *  - A start is tried at most `startMaxRetries` times while Postgres is
 *    unavailable (and 5 times cancelled at its statement timeout), then left
 *    to the reconciler ("unrecorded": the task stays ARMED, re-armed after
 *    the dispatch timeout), so a long outage cannot hold slots and commit
 *    points for ever.
 *
 * `execute` resolves once the outcome is durable in Postgres (or there was
 * nothing to do): only then may the caller commit the message's offset.
 * Outcomes are retried while Postgres is unreachable until they land; a
 * worker that stops in the middle answers "abandoned" and the offset stays
 * uncommitted (the message comes back, or the reconciler fails the attempt
 * once its lease expires). A handler still running when the worker stops
 * (`stop()`, after its drain timeout) is aborted and its attempt recorded as
 * interrupted — fenced, retried at once, the attempt given back — so the task
 * runs again elsewhere without waiting for its lease; "interrupted" is durable,
 * so its offset may be committed.
 */

import { setMaxListeners } from "node:events";
import {
  classifyFailure,
  type FailureInfo,
  timeoutFailure,
  unknownTypeFailure,
  workerStoppingFailure,
} from "../../domain/execution-error.js";
import type { InboundEnvelope } from "../../domain/inbound-envelope.js";
import type { Clock } from "../../ports/clock.js";
import type {
  CompleteOutcome,
  ExecutionRef,
  FailOutcome,
  StartedExecution,
  StartOutcome,
} from "../../ports/execution-store.js";
import type { Handler, HandlerRegistry } from "../../ports/handler.js";
import type { WorkerMetrics } from "../../ports/worker-metrics.js";
import { AttemptAbort, AttemptContext, abortAtTimeout } from "./attempt-abort.js";
import {
  Abandoned,
  DurableCalls,
  isRefusedValue,
  type RetryBounds,
  Unrecorded,
} from "./durable-calls.js";
import type { ExecutionService } from "./execution-service.js";
import { resultJsonOf } from "./handler-result.js";
import { type HeartbeatDeps, type HeartbeatOptions, LeaseKeeper, sleep } from "./lease-keeper.js";

export interface ExecutorDeps {
  /** The fenced transitions and their hot-tier follow-ups (retries, released nodes). */
  executions: ExecutionService;
  handlers: HandlerRegistry;
  clock: Clock;
  metrics: WorkerMetrics;
  onError: (error: unknown, what: string) => void;
  /** An envelope of a type no handler here serves: handed back (or, at last, dead). Log it. */
  onNoHandler?: (type: string, taskId: string, outcome: ExecutionReport) => void;
}

export interface ExecutorOptions {
  workerId: string;
  leaseMs: number;
  heartbeatMs: number;
  /** First wait before asking Postgres again; doubles up to 2 s. */
  dependencyRetryMs: number;
  maxResultBytes: number;
  /** Tries of a start while Postgres is unavailable, then left to the reconciler (default 30). */
  startMaxRetries?: number;
  /**
   * The local lease deadline is this much before the lease's end (default
   * 2000), at most half the time between a heartbeat and that end, so a
   * heartbeat always has time to land.
   */
  leaseMarginMs?: number;
  /** A task of a type no handler here serves: due again after retryMs, dead after deadAfterMs. */
  unknownType?: { retryMs: number; deadAfterMs: number };
}

/** An envelope delivered before its run_at (by the database's clock): run it again after dueInMs. */
export type ExecutionAttempt = { report: FinalReport } | { report: "not_due"; dueInMs: number };

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
  | "handed_back"
  | "not_due"
  | "abandoned"
  | "unrecorded";

/** What an attempt that went past its start came to. */
type FinalReport = Exclude<ExecutionReport, "not_due">;

const DEFAULT_START_MAX_RETRIES = 30;
const DEFAULT_LEASE_MARGIN_MS = 2000;
const DEFAULT_UNKNOWN_TYPE = { retryMs: 30_000, deadAfterMs: 3_600_000 };

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
  private readonly draining = new AbortController();
  /** The attempts whose handlers run now: stop() aborts each. */
  private readonly running = new Set<AttemptAbort>();
  private readonly leaseMarginMs: number;
  private readonly heartbeats: HeartbeatDeps;
  private readonly heartbeatOptions: HeartbeatOptions;
  private readonly startBounds: RetryBounds;
  /** The store's calls, repeated while Postgres is away (durable-calls.ts). */
  private readonly durable: DurableCalls;

  constructor(
    private readonly deps: ExecutorDeps,
    private readonly options: ExecutorOptions,
  ) {
    // Envelopes waiting for their run_at, and calls waiting to ask Postgres again,
    // listen for these (and remove their listeners when done): as many as the
    // queue holds is expected, not a leak.
    setMaxListeners(0, this.stopping.signal);
    setMaxListeners(0, this.draining.signal);
    this.leaseMarginMs = Math.min(
      options.leaseMarginMs ?? DEFAULT_LEASE_MARGIN_MS,
      Math.floor((options.leaseMs - options.heartbeatMs) / 2),
    );
    this.heartbeats = { executions: deps.executions, clock: deps.clock, onError: deps.onError };
    this.heartbeatOptions = { ...options, leaseMarginMs: this.leaseMarginMs };
    this.durable = new DurableCalls({
      retryMs: options.dependencyRetryMs,
      stopping: this.stopping.signal,
      metrics: deps.metrics,
      onError: deps.onError,
    });
    this.startBounds = {
      maxTimeouts: MAX_START_TIMEOUTS,
      maxRetries: options.startMaxRetries ?? DEFAULT_START_MAX_RETRIES,
    };
  }

  /** From now on, envelopes not yet started are left alone ("abandoned"); running ones go on. */
  drain(): void {
    this.draining.abort(new Error("worker draining"));
  }

  /**
   * From now on, waits for Postgres give up and running handlers see their
   * signal abort; their attempts are recorded as interrupted (one try each).
   */
  stop(): void {
    this.drain();
    this.stopping.abort(new Error("worker stopping"));
    for (const attempt of this.running) attempt.abort("stop");
  }

  /**
   * Runs the envelope; one delivered before its run_at waits for it here (see executeOnce).
   * A `then` rather than an async loop: nearly every envelope is due, and this runs per task.
   */
  execute(envelope: InboundEnvelope, queue: string): Promise<ExecutionReport> {
    return this.executeOnce(envelope, queue).then((attempt) =>
      attempt.report === "not_due"
        ? this.executeWhenDue(envelope, queue, attempt.dueInMs)
        : attempt.report,
    );
  }

  private async executeWhenDue(
    envelope: InboundEnvelope,
    queue: string,
    dueInMs: number,
  ): Promise<ExecutionReport> {
    return (await this.untilDue(dueInMs)) ? this.execute(envelope, queue) : "abandoned";
  }

  /**
   * Resolves true after `dueInMs`, false at once when the worker drains or
   * stops (the envelope, not started, is delivered again).
   */
  async untilDue(dueInMs: number): Promise<boolean> {
    await sleep(dueInMs, this.draining.signal);
    return !this.draining.signal.aborted;
  }

  /**
   * One try: "not_due" (with how long) when the database's clock says the
   * task is not due yet — nothing changed, no attempt spent; the caller
   * waits (holding no slot) and calls again.
   */
  async executeOnce(envelope: InboundEnvelope, queue: string): Promise<ExecutionAttempt> {
    const ref: ExecutionRef = {
      tenantId: envelope.tenantId,
      taskId: envelope.taskId,
      fencingToken: envelope.fencingToken,
      runAtMs: envelope.runAtMs,
      dispatchedAtMs: envelope.dispatchedAtMs,
    };
    if (this.draining.signal.aborted) return { report: "abandoned" };
    try {
      const { start, nowMs, sentMonoMs } = await this.start(ref, envelope.type);
      if (start.kind === "not_due") {
        this.deps.metrics.outcome(envelope.type, "not_due");
        return { report: "not_due", dueInMs: start.dueInMs };
      }
      if (start.kind !== "started") {
        this.deps.metrics.staleToken("start");
        this.deps.metrics.outcome(envelope.type, "stale");
        return { report: "stale" };
      }
      this.deps.metrics.started(queue, nowMs - start.execution.runAtMs);
      this.deps.metrics.inFlight(envelope.tenantId, 1);
      try {
        const deadlineMonoMs = sentMonoMs + this.options.leaseMs - this.leaseMarginMs;
        return { report: await this.runStarted(envelope, ref, start.execution, deadlineMonoMs) };
      } finally {
        this.deps.metrics.inFlight(envelope.tenantId, -1);
      }
    } catch (error) {
      if (error instanceof Abandoned) return { report: "abandoned" };
      if (error instanceof Unrecorded) return { report: "unrecorded" };
      throw error;
    }
  }

  /** The fenced start, its lease dated at each try's send; bounded while Postgres is away. */
  private start(
    ref: ExecutionRef,
    type: string,
  ): Promise<{ start: StartOutcome; nowMs: number; sentMonoMs: number }> {
    let nowMs = 0;
    let sentMonoMs = 0;
    const { workerId, leaseMs } = this.options;
    const tryStart = () => {
      nowMs = this.deps.clock.nowMs();
      sentMonoMs = this.deps.clock.monotonicMs();
      return this.deps.executions.start(ref, workerId, leaseMs, nowMs);
    };
    return this.durable.call("start", tryStart, this.startBounds).then(
      (start) => ({ start, nowMs, sentMonoMs }),
      (error: unknown) => {
        if (error instanceof Unrecorded) this.deps.metrics.outcome(type, "start_given_up");
        throw error;
      },
    );
  }

  private async runStarted(
    envelope: InboundEnvelope,
    ref: ExecutionRef,
    execution: StartedExecution,
    deadlineMonoMs: number,
  ): Promise<FinalReport> {
    const handler = this.deps.handlers.get(envelope.type);
    if (!handler) return this.handBack(envelope, ref);
    const run = await this.runHandler(envelope, ref, execution, handler, deadlineMonoMs);
    if (run.kind === "lost_lease") {
      if (run.by === "stale") this.deps.metrics.staleToken("heartbeat");
      else this.deps.metrics.leaseDeadlinePassed();
      this.deps.metrics.outcome(envelope.type, "lost_lease");
      return "lost_lease";
    }
    const nowMs = this.deps.clock.nowMs();
    if (this.stopping.signal.aborted && run.kind === "failed" && run.byStop) {
      // Not the task's fault: it runs again at once, on another worker, without
      // waiting for the lease. If Postgres is down, Abandoned: the lease it is.
      const interrupted = await this.durable.call("interrupt", () =>
        this.deps.executions.interrupt(ref, STOPPED, nowMs),
      );
      return this.afterFailure(envelope.type, interrupted, "interrupted");
    }
    let failure: FailureInfo;
    if (run.kind === "succeeded") {
      const done: CompleteOutcome | Error = await this.durable
        .call("complete", () => this.deps.executions.complete(ref, run.resultJson, nowMs))
        .catch((error: Error) => error);
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
    const failed = await this.durable.call("fail", () =>
      this.deps.executions.fail(ref, failure, nowMs),
    );
    return this.afterFailure(envelope.type, failed, "retrying");
  }

  /**
   * No handler here for the type (a rolling deployment: an older worker got
   * a newer type): given back for another worker, the attempt not counted,
   * due again after unknownType.retryMs; DEAD once no worker had one for
   * unknownType.deadAfterMs (the store keeps since when).
   */
  private async handBack(envelope: InboundEnvelope, ref: ExecutionRef): Promise<FinalReport> {
    const { retryMs, deadAfterMs } = this.options.unknownType ?? DEFAULT_UNKNOWN_TYPE;
    this.deps.metrics.noHandler(envelope.type);
    const failure = { ...unknownTypeFailure(envelope.type), retryable: true };
    const outcome = await this.durable.call("hand back", () => {
      const nowMs = this.deps.clock.nowMs();
      return this.deps.executions.handBack(ref, failure, nowMs, {
        retryAtMs: nowMs + retryMs,
        deadAfterMs,
      });
    });
    const report =
      outcome.kind === "retrying"
        ? "handed_back"
        : this.afterFailure(envelope.type, outcome, "retrying");
    if (report === "handed_back") this.deps.metrics.outcome(envelope.type, "handed_back");
    this.deps.onNoHandler?.(envelope.type, envelope.taskId, report);
    return report;
  }

  /** After a durable fail or interrupt (its hot-tier follow-ups are the service's): metrics. */
  private afterFailure(
    type: string,
    failed: FailOutcome,
    retrying: "retrying" | "interrupted",
  ): FinalReport {
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

  private stale(type: string, at: "complete" | "fail" | "interrupt"): FinalReport {
    this.deps.metrics.staleToken(at);
    this.deps.metrics.outcome(type, "stale");
    return "stale";
  }

  /** Runs the handler under its timeout and the lease (heartbeat, local deadline). Never throws. */
  private async runHandler(
    envelope: InboundEnvelope,
    ref: ExecutionRef,
    execution: StartedExecution,
    handler: Handler,
    deadlineMonoMs: number,
  ): Promise<
    | { kind: "succeeded"; resultJson: string }
    | { kind: "failed"; failure: FailureInfo; byStop: boolean }
    | { kind: "lost_lease"; by: "stale" | "deadline" }
  > {
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
    // A start that resolved after the stop: the handler is not called at all.
    if (this.stopping.signal.aborted) return { kind: "failed", failure: STOPPED, byStop: true };
    const abort = new AttemptAbort();
    this.running.add(abort);
    const timeout = setTimeout(abortAtTimeout, execution.timeoutMs, abort);
    const lease = new LeaseKeeper(
      this.heartbeats,
      this.heartbeatOptions,
      ref,
      deadlineMonoMs,
      abort,
    );
    const ctx = new AttemptContext(
      envelope.taskId,
      envelope.tenantId,
      envelope.type,
      execution.attempt,
      execution.maxAttempts,
      envelope.fencingToken,
      envelope.idempotencyKey,
      execution.runAtMs,
      execution.timeoutMs,
      parentResults,
      abort,
    );
    const startedMs = this.deps.clock.monotonicMs();
    try {
      const result = await abort.race(handler, envelope.payload, ctx);
      if (abort.why === "stale" || abort.why === "deadline")
        return { kind: "lost_lease", by: abort.why };
      return { kind: "succeeded", resultJson: resultJsonOf(result, this.options.maxResultBytes) };
    } catch (error) {
      const why = abort.why;
      if (why === "stale" || why === "deadline") return { kind: "lost_lease", by: why };
      if (why === "timeout") {
        return { kind: "failed", failure: timeoutFailure(execution.timeoutMs), byStop: false };
      }
      return { kind: "failed", failure: classifyFailure(error), byStop: why === "stop" };
    } finally {
      clearTimeout(timeout);
      lease.end();
      this.running.delete(abort);
      this.deps.metrics.ran(envelope.type, this.deps.clock.monotonicMs() - startedMs);
    }
  }
}
