/**
 * What one node saw each tenant do over the last minutes, in buckets of
 * BUCKET_MS aligned to the epoch (so every node's buckets line up and sum):
 * completions, failed attempts (retried, dead or cancelled), deaths, and the
 * lateness of publish (envelope dispatched_at − run_at) and of start
 * (fenced start − run_at) as histograms (latency-histogram.ts).
 *
 * It is the per-tenant, windowed cousin of the Prometheus metrics the roles
 * keep: those are per process and cumulative, so they can say neither "this
 * tenant" nor "the last five minutes". It lives in memory; the node reporter
 * writes `snapshot()` to node_tenant_stats with each report, and the API sums
 * the rows of every node (app/dashboard/stats.ts). A node that dies loses
 * at most its last report interval.
 *
 * Cost: O(1) per recorded event; memory is bounded by the tenants active in
 * the window × WINDOW_BUCKETS × the bins they used.
 */
import type { ActivityBucket } from "../../ports/cluster-store.js";
import { observe } from "./latency-histogram.js";

export const BUCKET_MS = 10_000;
/** Five minutes. */
export const WINDOW_BUCKETS = 30;
export const WINDOW_MS = BUCKET_MS * WINDOW_BUCKETS;

export const bucketStartOf = (atMs: number): number => Math.floor(atMs / BUCKET_MS) * BUCKET_MS;

export const emptyBucket = (startMs: number): ActivityBucket => ({
  startMs,
  completed: 0,
  failed: 0,
  dead: 0,
  publish: {},
  start: {},
});

export class TenantActivity {
  private readonly tenants = new Map<string, Map<number, ActivityBucket>>();

  started(tenantId: string, atMs: number, startLatenessMs: number, publishLatenessMs?: number) {
    const bucket = this.bucket(tenantId, atMs);
    observe(bucket.start, startLatenessMs);
    if (publishLatenessMs !== undefined) observe(bucket.publish, publishLatenessMs);
  }

  completed(tenantId: string, atMs: number): void {
    this.bucket(tenantId, atMs).completed++;
  }

  failed(tenantId: string, atMs: number, dead: boolean): void {
    const bucket = this.bucket(tenantId, atMs);
    bucket.failed++;
    if (dead) bucket.dead++;
  }

  /** Each tenant's buckets inside the window ending at nowMs, oldest first; older ones are dropped. */
  snapshot(nowMs: number): Map<string, ActivityBucket[]> {
    const oldestMs = bucketStartOf(nowMs) - (WINDOW_BUCKETS - 1) * BUCKET_MS;
    const out = new Map<string, ActivityBucket[]>();
    for (const [tenantId, buckets] of this.tenants) {
      for (const startMs of buckets.keys()) if (startMs < oldestMs) buckets.delete(startMs);
      if (buckets.size === 0) {
        this.tenants.delete(tenantId);
        continue;
      }
      out.set(
        tenantId,
        [...buckets.values()].sort((a, b) => a.startMs - b.startMs),
      );
    }
    return out;
  }

  private bucket(tenantId: string, atMs: number): ActivityBucket {
    let buckets = this.tenants.get(tenantId);
    if (!buckets) {
      buckets = new Map();
      this.tenants.set(tenantId, buckets);
    }
    const startMs = bucketStartOf(atMs);
    let bucket = buckets.get(startMs);
    if (!bucket) {
      bucket = emptyBucket(startMs);
      buckets.set(startMs, bucket);
    }
    return bucket;
  }
}
