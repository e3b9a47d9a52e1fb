/**
 * An ExecutionStore that tells a TenantActivity what happened: a start (with
 * its lateness), a completion, a failed attempt, a death. Every worker path
 * goes through an ExecutionStore — the Node worker, the HTTP worker protocol
 * in the API role, the reconciler's expired leases — so wrapping it is the
 * one place that sees them all, without touching the use cases. Recording is
 * in memory and synchronous: it adds no I/O to the hot path.
 */
import type {
  CompleteOutcome,
  ExecutionFailure,
  ExecutionRef,
  ExecutionStore,
  ExpiredLease,
  FailOutcome,
  HandBackPolicy,
  HeartbeatOutcome,
  ReplayOutcome,
  StartOutcome,
} from "../../ports/execution-store.js";
import type { TenantActivity } from "./tenant-activity.js";

export class RecordingExecutionStore implements ExecutionStore {
  constructor(
    private readonly inner: ExecutionStore,
    private readonly activity: TenantActivity,
  ) {}

  // start and complete, once per task, add one `then` each rather than an async function of
  // their own: about 0.25 KB less garbage per call (bench/RESULTS.md, session 36).
  start(
    ref: ExecutionRef,
    workerId: string,
    leaseMs: number,
    nowMs: number,
  ): Promise<StartOutcome> {
    return this.inner.start(ref, workerId, leaseMs, nowMs).then((outcome) => {
      if (outcome.kind === "started") {
        const runAtMs = outcome.execution.runAtMs;
        const publishMs =
          ref.dispatchedAtMs === undefined ? undefined : ref.dispatchedAtMs - runAtMs;
        this.activity.started(ref.tenantId, nowMs, nowMs - runAtMs, publishMs);
      }
      return outcome;
    });
  }

  heartbeat(
    ref: ExecutionRef,
    workerId: string,
    leaseMs: number,
    nowMs: number,
  ): Promise<HeartbeatOutcome> {
    return this.inner.heartbeat(ref, workerId, leaseMs, nowMs);
  }

  complete(ref: ExecutionRef, resultJson: string, nowMs: number): Promise<CompleteOutcome> {
    return this.inner.complete(ref, resultJson, nowMs).then((outcome) => {
      if (outcome.kind === "completed") this.activity.completed(ref.tenantId, nowMs);
      return outcome;
    });
  }

  async fail(ref: ExecutionRef, failure: ExecutionFailure, nowMs: number): Promise<FailOutcome> {
    const outcome = await this.inner.fail(ref, failure, nowMs);
    this.recordFailure(ref.tenantId, outcome.kind, nowMs);
    return outcome;
  }

  /** Not the task's failure (its worker stopped): not counted. */
  interrupt(ref: ExecutionRef, failure: ExecutionFailure, nowMs: number): Promise<FailOutcome> {
    return this.inner.interrupt(ref, failure, nowMs);
  }

  /** No handler here: counted only if it ends the task (no worker had one for long enough). */
  async handBack(
    ref: ExecutionRef,
    failure: ExecutionFailure,
    nowMs: number,
    policy: HandBackPolicy,
  ): Promise<FailOutcome> {
    const outcome = await this.inner.handBack(ref, failure, nowMs, policy);
    if (outcome.kind === "dead") this.recordFailure(ref.tenantId, outcome.kind, nowMs);
    return outcome;
  }

  replay(
    tenantId: string,
    taskId: string,
    apiKeyId: string | null,
    nowMs: number,
  ): Promise<ReplayOutcome> {
    return this.inner.replay(tenantId, taskId, apiKeyId, nowMs);
  }

  async expireLeases(nowMs: number, limit: number): Promise<ExpiredLease[]> {
    const expired = await this.inner.expireLeases(nowMs, limit);
    for (const lease of expired) this.recordFailure(lease.tenantId, lease.outcome, nowMs);
    return expired;
  }

  parentResults(tenantId: string, taskId: string): Promise<Record<string, unknown>> {
    return this.inner.parentResults(tenantId, taskId);
  }

  private recordFailure(tenantId: string, kind: FailOutcome["kind"], nowMs: number): void {
    if (kind === "retrying" || kind === "cancelled") this.activity.failed(tenantId, nowMs, false);
    if (kind === "dead") this.activity.failed(tenantId, nowMs, true);
  }
}
