/**
 * The reconciler (leader only): repairs transitions that a crash, a pause or
 * a lost Redis left half done. Each step is idempotent, so a second run right
 * after the first changes nothing (docs/architecture.md, invariant 8):
 *  1. return expired claims: ids a dispatcher claimed and neither published
 *     nor gave back within the claim TTL go back to due;
 *  2. re-arm stale ARMED tasks: armed and due longer ago than the dispatch
 *     timeout, nobody started them → SCHEDULED with a new fencing token
 *     (the envelope already out, if any, can no longer start them). A task
 *     armed late waits as long again before its next re-arm (at most
 *     REARM_BACKOFF_LIMIT timeouts), so a queue that is behind drains
 *     instead of filling with superseded envelopes;
 *  3. fail expired executions: RUNNING tasks whose execution lease expired
 *     (the worker died or paused) are failed with a new fencing token — the
 *     old holder's late heartbeat or commit is stale — and retried after
 *     their backoff or dead-lettered (a workflow node's death releases or
 *     skips its children in the same transaction; a retry of a node whose
 *     workflow already failed or was cancelled is cancelled instead);
 *  4. re-hydrate: SCHEDULED tasks due within `rehydrateAheadMs` that are in
 *     neither due nor claimed (a Redis flush, a lost add, a retry from step 3)
 *     are added back.
 * With workers running, step 2 is also what recovers an envelope a worker
 * never started (lost with a consumer's uncommitted batch, or refused).
 */
import { HOT_SHARD_COUNT } from "../../domain/shard.js";
import type { Clock } from "../../ports/clock.js";
import type { DispatchHotTier } from "../../ports/dispatch-hot-tier.js";
import type { DispatchMetrics } from "../../ports/dispatch-metrics.js";
import type { DispatchStore } from "../../ports/dispatch-store.js";
import type { ExecutionStore } from "../../ports/execution-store.js";
import { fromStart, sweepScheduled } from "./scheduled-sweep.js";

export interface ReconcilerOptions {
  dispatchTimeoutMs: number;
  rehydrateAheadMs: number;
  batchSize: number;
}

export interface ReconcileReport {
  claimsReturned: number;
  rearmed: number;
  leasesExpired: number;
  rehydrated: number;
}

export class Reconciler {
  constructor(
    private readonly store: DispatchStore,
    private readonly executions: ExecutionStore,
    private readonly hotTier: DispatchHotTier,
    private readonly clock: Clock,
    private readonly metrics: DispatchMetrics,
    private readonly options: ReconcilerOptions,
  ) {}

  /**
   * Every step runs even if an earlier one failed (Redis away must not stop
   * the Postgres-only repairs); the failures are thrown together at the end.
   */
  async run(): Promise<ReconcileReport> {
    const failures: unknown[] = [];
    const step = async (repair: () => Promise<number>): Promise<number> => {
      try {
        return await repair();
      } catch (error) {
        failures.push(error);
        return 0;
      }
    };
    const claimsReturned = await step(() => this.returnExpiredClaims());
    const rearmed = await step(() => this.rearmStale());
    const leasesExpired = await step(() => this.expireLeases());
    const rehydrated = await step(() => this.rehydrate());
    this.metrics.claimsReturned(claimsReturned);
    this.metrics.rearmed(rearmed);
    this.metrics.rehydrated(rehydrated);
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, "reconcile steps failed");
    return { claimsReturned, rearmed, leasesExpired, rehydrated };
  }

  private async expireLeases(): Promise<number> {
    const nowMs = this.clock.nowMs();
    let total = 0;
    for (;;) {
      const failed = await this.executions.expireLeases(nowMs, this.options.batchSize);
      const dead = failed.filter((f) => f.outcome !== "retrying").length;
      this.metrics.leasesExpired(failed.length - dead, dead);
      // Workflow nodes those deaths released; step 4 below re-hydrates any this add loses.
      const released = failed.flatMap((f) => f.released);
      if (released.length > 0) await this.hotTier.addDue(released);
      total += failed.length;
      if (failed.length < this.options.batchSize) return total;
    }
  }

  private async returnExpiredClaims(): Promise<number> {
    const nowMs = this.clock.nowMs();
    let total = 0;
    for (let shard = 0; shard < HOT_SHARD_COUNT; shard++) {
      for (;;) {
        const n = await this.hotTier.returnExpired(shard, nowMs, this.options.batchSize);
        total += n;
        if (n < this.options.batchSize) break;
      }
    }
    return total;
  }

  private async rearmStale(): Promise<number> {
    const nowMs = this.clock.nowMs();
    const staleBeforeMs = nowMs - this.options.dispatchTimeoutMs;
    const maxWaitMs = this.options.dispatchTimeoutMs * REARM_BACKOFF_LIMIT;
    let total = 0;
    for (;;) {
      const n = await this.store.rearmStale(
        staleBeforeMs,
        maxWaitMs,
        nowMs,
        this.options.batchSize,
      );
      total += n;
      if (n < this.options.batchSize) return total;
    }
  }

  private async rehydrate(): Promise<number> {
    const beforeMs = this.clock.nowMs() + this.options.rehydrateAheadMs;
    return sweepScheduled(
      this.store,
      beforeMs,
      fromStart(ALL_SHARDS),
      this.options.batchSize,
      (page) => this.hotTier.rehydrate(page),
    );
  }
}

/** A task re-armed again and again waits at most this many dispatch timeouts between re-arms. */
export const REARM_BACKOFF_LIMIT = 8;

const ALL_SHARDS = Array.from({ length: HOT_SHARD_COUNT }, (_, shard) => shard);
