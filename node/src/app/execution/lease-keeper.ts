/**
 * Keeping one attempt's execution lease: the heartbeats that renew it, and
 * the local deadline (by the worker's own monotonic clock) past which the
 * attempt must stop — its handler's signal aborts and nothing more is sent
 * for its token, whether or not Postgres has answered (issue 13: a worker cut
 * off from Postgres must not run on past its lease while the task runs
 * again elsewhere).
 */
import type { Clock } from "../../ports/clock.js";
import type { ExecutionRef } from "../../ports/execution-store.js";
import type { ExecutionService } from "./execution-service.js";

export interface HeartbeatDeps {
  executions: Pick<ExecutionService, "heartbeat">;
  clock: Clock;
  onError: (error: unknown, what: string) => void;
}

export interface HeartbeatOptions {
  workerId: string;
  leaseMs: number;
  heartbeatMs: number;
  /** The lease is trusted until this long before its end. */
  leaseMarginMs: number;
}

/**
 * Keeps one attempt's lease until `end()`: renews it every heartbeatMs, one
 * heartbeat at a time (a hung one is not joined by more), and aborts the
 * attempt with "deadline" once the local deadline passes without a renewal,
 * or with "stale" when a heartbeat finds the attempt is no longer ours. Each
 * heartbeat that lands moves the deadline to its send + leaseMs − margin; a
 * failed one is logged and the next tries again: the deadline decides when
 * to give up.
 *
 * One timer at a time, for the next heartbeat or, while one is out (or would
 * come after it), for the deadline: the worker keeps one of these per running
 * task, and every object per task is garbage to collect at thousands of
 * tasks per second. The clock says how far away each instant is; a timer
 * fires for what it was set for, never re-checked against the clock, except
 * that a heartbeat due after a pause past the deadline (a frozen process)
 * ends the attempt instead.
 */
export class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private timerFor: "heartbeat" | "deadline" = "heartbeat";
  private nextBeatMonoMs: number;
  private beating = false;
  private ended = false;
  private readonly onTimer = () => this.fired();

  constructor(
    private readonly deps: HeartbeatDeps,
    private readonly options: HeartbeatOptions,
    private readonly ref: ExecutionRef,
    private deadlineMonoMs: number,
    /** Told when the lease is lost: its attempt (AttemptAbort), so that no closure is made per attempt. */
    private readonly attempt: { abort(by: "stale" | "deadline"): void },
  ) {
    this.nextBeatMonoMs = deps.clock.monotonicMs() + options.heartbeatMs;
    this.arm();
  }

  /** The attempt is over: no more heartbeats, and the attempt is not aborted. */
  end(): void {
    this.ended = true;
    clearTimeout(this.timer);
  }

  private arm(): void {
    clearTimeout(this.timer);
    const nowMs = this.deps.clock.monotonicMs();
    this.timerFor =
      !this.beating && this.nextBeatMonoMs < this.deadlineMonoMs ? "heartbeat" : "deadline";
    const atMs = this.timerFor === "heartbeat" ? this.nextBeatMonoMs : this.deadlineMonoMs;
    this.timer = setTimeout(this.onTimer, Math.max(0, atMs - nowMs));
  }

  private fired(): void {
    if (this.ended) return;
    if (this.timerFor === "deadline" || this.deps.clock.monotonicMs() >= this.deadlineMonoMs) {
      this.end();
      this.attempt.abort("deadline");
      return;
    }
    void this.beat();
  }

  private async beat(): Promise<void> {
    const { workerId, leaseMs, heartbeatMs, leaseMarginMs } = this.options;
    this.beating = true;
    this.arm(); // the deadline, while this heartbeat is out
    const sentMonoMs = this.deps.clock.monotonicMs();
    try {
      const answer = await this.deps.executions.heartbeat(
        this.ref,
        workerId,
        leaseMs,
        this.deps.clock.nowMs(),
      );
      if (this.ended) return;
      if (answer.kind !== "extended") {
        this.end();
        this.attempt.abort("stale");
        return;
      }
      this.deadlineMonoMs = Math.max(this.deadlineMonoMs, sentMonoMs + leaseMs - leaseMarginMs);
    } catch (error) {
      if (this.ended) return;
      this.deps.onError(error, "heartbeat");
    }
    this.beating = false;
    this.nextBeatMonoMs = this.deps.clock.monotonicMs() + heartbeatMs;
    this.arm();
  }
}

/** Resolves after `ms`, or at once when `signal` aborts; leaves no listener on the long-lived signal. */
export const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
