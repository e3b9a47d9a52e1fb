/**
 * The Overview page's numbers for one tenant (GET /v1/stats): counts by state
 * and priority, overdue tasks, open dead letters, completed/s and failed/s,
 * and the lateness of publish and of start (p50/p99) over the last five
 * minutes, with a series in 10-second buckets, and the watchdog's alerts.
 *
 * Where each number comes from, and what it costs:
 *  - counts: the tenant's newest STATS_MAX_ROWS tasks by id (creation order),
 *    one capped index scan; past the cap the answer says `capped` and since
 *    when it counted. Overdue and open dead letters: capped counts too.
 *  - rates and lateness: node_tenant_stats, what every node recorded in
 *    memory (tenant-activity.ts) and wrote with its report; summed here per
 *    bucket across nodes. No scan of tasks at all.
 * One answer per tenant is kept for CACHE_MS, so a room full of open
 * dashboards costs Postgres one query set per tenant per second.
 */
import type { Priority, TaskStatus } from "../../domain/task.js";
import type { Principal } from "../../domain/tenant.js";
import type { Clock } from "../../ports/clock.js";
import type { ActivityBucket, AlertRecord } from "../../ports/cluster-store.js";
import type { DashboardStore } from "../../ports/dashboard-store.js";
import { countOf, type Histogram, mergeInto, quantileMs } from "./latency-histogram.js";
import { uuidv7Ms } from "./query-params.js";
import {
  BUCKET_MS,
  bucketStartOf,
  emptyBucket,
  WINDOW_BUCKETS,
  WINDOW_MS,
} from "./tenant-activity.js";

export const STATS_MAX_ROWS = 100_000;
const CACHE_MS = 1000;
const MAX_CACHED_TENANTS = 10_000;
/** The "now" rates: the last full minute. */
const RATE_BUCKETS = 6;

export interface LatenessSummary {
  p50Ms: number | null;
  p99Ms: number | null;
  count: number;
}

export interface SeriesPoint {
  startMs: number;
  completedPerS: number;
  failedPerS: number;
  publishP99Ms: number | null;
  startP50Ms: number | null;
  startP99Ms: number | null;
}

export interface TenantStats {
  nowMs: number;
  windowMs: number;
  byState: Array<{ status: TaskStatus; priority: Priority; count: number }>;
  countedRows: number;
  capped: boolean;
  /** Creation instant of the oldest task counted (null: none). */
  countedSinceMs: number | null;
  overdue: number;
  openDeadLetters: number;
  /** Over the last minute. */
  completedPerS: number;
  failedPerS: number;
  /** Over the window. */
  completed: number;
  failed: number;
  dead: number;
  publishLateness: LatenessSummary;
  startLateness: LatenessSummary;
  series: SeriesPoint[];
  alerts: AlertRecord[];
}

export class TenantStatsService {
  private readonly cache = new Map<string, { atMs: number; stats: TenantStats }>();

  constructor(
    private readonly store: DashboardStore,
    private readonly clock: Clock,
  ) {}

  async get(principal: Principal): Promise<TenantStats> {
    const nowMs = this.clock.nowMs();
    const hit = this.cache.get(principal.tenantId);
    if (hit && nowMs - hit.atMs < CACHE_MS && nowMs >= hit.atMs) return hit.stats;
    const record = await this.store.stats(principal.tenantId, {
      maxRows: STATS_MAX_ROWS,
      overdueBeforeMs: nowMs - principal.limits.graceMs,
      activitySinceMs: nowMs - WINDOW_MS,
    });
    const stats: TenantStats = {
      nowMs,
      windowMs: WINDOW_MS,
      byState: record.counts.byState,
      countedRows: record.counts.countedRows,
      capped: record.counts.capped,
      countedSinceMs:
        record.counts.oldestCountedId === null ? null : uuidv7Ms(record.counts.oldestCountedId),
      overdue: record.counts.overdue,
      openDeadLetters: record.counts.openDeadLetters,
      alerts: record.alerts,
      ...summarise(sumByBucket(record.activity, nowMs)),
    };
    if (this.cache.size >= MAX_CACHED_TENANTS) this.cache.clear();
    this.cache.set(principal.tenantId, { atMs: nowMs, stats });
    return stats;
  }
}

/** Every node's buckets summed per bucket, one per bucket of the window ending at nowMs (the current one included). */
export function sumByBucket(perNode: readonly ActivityBucket[][], nowMs: number): ActivityBucket[] {
  const lastMs = bucketStartOf(nowMs);
  const firstMs = lastMs - (WINDOW_BUCKETS - 1) * BUCKET_MS;
  const window = Array.from({ length: WINDOW_BUCKETS }, (_, i) =>
    emptyBucket(firstMs + i * BUCKET_MS),
  );
  for (const buckets of perNode) {
    for (const b of buckets) {
      const index = (b.startMs - firstMs) / BUCKET_MS;
      const into = window[index];
      if (!Number.isInteger(index) || into === undefined) continue;
      into.completed += b.completed;
      into.failed += b.failed;
      into.dead += b.dead;
      mergeInto(into.publish, b.publish);
      mergeInto(into.start, b.start);
    }
  }
  return window;
}

function summarise(window: ActivityBucket[]) {
  const publish: Histogram = {};
  const start: Histogram = {};
  for (const b of window) {
    mergeInto(publish, b.publish);
    mergeInto(start, b.start);
  }
  // The last bucket is still filling: the rates use the full minute before it.
  const recent = window.slice(-1 - RATE_BUCKETS, -1);
  const seconds = (RATE_BUCKETS * BUCKET_MS) / 1000;
  const sum = (pick: (b: ActivityBucket) => number, of = window) =>
    of.reduce((total, b) => total + pick(b), 0);
  return {
    completedPerS: sum((b) => b.completed, recent) / seconds,
    failedPerS: sum((b) => b.failed, recent) / seconds,
    completed: sum((b) => b.completed),
    failed: sum((b) => b.failed),
    dead: sum((b) => b.dead),
    publishLateness: lateness(publish),
    startLateness: lateness(start),
    series: window.map((b) => ({
      startMs: b.startMs,
      completedPerS: b.completed / (BUCKET_MS / 1000),
      failedPerS: b.failed / (BUCKET_MS / 1000),
      publishP99Ms: quantileMs(b.publish, 0.99),
      startP50Ms: quantileMs(b.start, 0.5),
      startP99Ms: quantileMs(b.start, 0.99),
    })),
  };
}

const lateness = (histogram: Histogram): LatenessSummary => ({
  p50Ms: quantileMs(histogram, 0.5),
  p99Ms: quantileMs(histogram, 0.99),
  count: countOf(histogram),
});
