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
 * Renews the lease every heartbeatMs, one heartbeat at a time (a hung one
 * is not joined by more), until `finished`. Each one that lands moves the
 * local deadline to its send + leaseMs − margin; a `stale` answer means the
 * attempt is no longer ours. A failed one is logged and the next tries
 * again: the local deadline decides when to give up.
 */
export async function keepLease(
  deps: HeartbeatDeps,
  options: HeartbeatOptions,
  ref: ExecutionRef,
  lease: LeaseWatch,
  finished: AbortSignal,
  lost: () => void,
): Promise<void> {
  const { workerId, leaseMs, heartbeatMs, leaseMarginMs } = options;
  for (;;) {
    await sleep(heartbeatMs, finished);
    if (finished.aborted) return;
    const sentMonoMs = deps.clock.monotonicMs();
    try {
      const answer = await deps.executions.heartbeat(ref, workerId, leaseMs, deps.clock.nowMs());
      if (finished.aborted) return;
      if (answer.kind !== "extended") return lost();
      lease.renewed(sentMonoMs + leaseMs - leaseMarginMs);
    } catch (error) {
      if (finished.aborted) return;
      deps.onError(error, "heartbeat");
    }
  }
}

/**
 * The local deadline of one attempt's lease, on the injected monotonic
 * clock: fires `expired` once it passes without a renewal. A timer, re-set at
 * each renewal; the clock says how far away the deadline is.
 */
export class LeaseWatch {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private deadlineMonoMs: number,
    private readonly clock: Clock,
    private readonly expired: () => void,
  ) {
    this.arm();
  }

  renewed(deadlineMonoMs: number): void {
    this.deadlineMonoMs = Math.max(this.deadlineMonoMs, deadlineMonoMs);
    this.arm();
  }

  end(): void {
    clearTimeout(this.timer);
  }

  private arm(): void {
    clearTimeout(this.timer);
    const leftMs = this.deadlineMonoMs - this.clock.monotonicMs();
    this.timer = setTimeout(this.expired, Math.max(0, leftMs));
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
