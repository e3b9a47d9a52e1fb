/**
 * The dashboard's in-memory activity (tenant-activity.ts), its histograms
 * (latency-histogram.ts) and how the stats sum nodes (tenant-stats.ts):
 * with a fake clock, no I/O.
 */
import { describe, expect, it } from "vitest";
import {
  binOfMs,
  countOf,
  mergeInto,
  quantileMs,
  upperMsOfBin,
} from "../../../src/app/dashboard/latency-histogram.js";
import { RecordingExecutionStore } from "../../../src/app/dashboard/recording-execution-store.js";
import {
  BUCKET_MS,
  TenantActivity,
  WINDOW_BUCKETS,
} from "../../../src/app/dashboard/tenant-activity.js";
import { sumByBucket, TenantStatsService } from "../../../src/app/dashboard/tenant-stats.js";
import { DEFAULT_TENANT_LIMITS } from "../../../src/domain/tenant.js";
import type { ActivityBucket } from "../../../src/ports/cluster-store.js";
import type { DashboardStore, StatsQuery } from "../../../src/ports/dashboard-store.js";
import type { ExecutionStore } from "../../../src/ports/execution-store.js";
import { FakeClock } from "../../support/fake-clock.js";

describe("latency histogram", () => {
  it("reports a quantile no lower than the sample and at most 19% above it", () => {
    for (const ms of [1.5, 2, 7, 33, 250, 999, 1000, 4321, 60_000, 3_600_000]) {
      const upper = upperMsOfBin(binOfMs(ms));
      expect(upper).toBeGreaterThanOrEqual(ms * 0.999_999);
      expect(upper / ms).toBeLessThan(1.19);
    }
    expect(binOfMs(0)).toBe(0);
    expect(binOfMs(-5)).toBe(0);
    expect(binOfMs(Number.NaN)).toBe(0);
  });

  it("finds p50 and p99 of summed histograms", () => {
    // Two nodes: 98 samples of 10 ms between them, and 2 of 5 s on one.
    const a: Record<string, number> = { [binOfMs(10)]: 49, [binOfMs(5000)]: 2 };
    const b: Record<string, number> = { [binOfMs(10)]: 49 };
    const sum = mergeInto(mergeInto({}, a), b);
    expect(countOf(sum)).toBe(100);
    expect(quantileMs(sum, 0.5)).toBeCloseTo(upperMsOfBin(binOfMs(10)));
    expect(quantileMs(sum, 0.99)).toBeCloseTo(upperMsOfBin(binOfMs(5000)));
    expect(quantileMs({}, 0.5)).toBeNull();
  });
});

describe("tenant activity", () => {
  it("records per tenant in buckets aligned to the epoch and forgets the window's past", () => {
    const t0 = 1_700_000_000_000;
    const activity = new TenantActivity();
    activity.started("a", t0 + 1, 12, 3);
    activity.completed("a", t0 + 2);
    activity.failed("a", t0 + BUCKET_MS + 5, true);
    activity.failed("b", t0 + 7, false);
    const snap = activity.snapshot(t0 + BUCKET_MS + 10);
    const a = snap.get("a")!;
    expect(a.map((bucket) => bucket.startMs % BUCKET_MS)).toEqual([0, 0]);
    expect(a[0]).toMatchObject({ completed: 1, failed: 0, dead: 0 });
    expect(countOf(a[0]!.start)).toBe(1);
    expect(countOf(a[0]!.publish)).toBe(1);
    expect(a[1]).toMatchObject({ completed: 0, failed: 1, dead: 1 });
    expect(snap.get("b")![0]).toMatchObject({ failed: 1, dead: 0 });
    // Five minutes later nothing is left, and the tenants are gone from memory.
    expect(activity.snapshot(t0 + (WINDOW_BUCKETS + 2) * BUCKET_MS).size).toBe(0);
  });

  it("is fed by the execution store's outcomes, and counts no interrupt", async () => {
    const activity = new TenantActivity();
    const inner = {
      start: async () => ({
        kind: "started",
        execution: { attempt: 1, maxAttempts: 3, runAtMs: 1000, timeoutMs: 1, leaseExpiresAtMs: 0 },
      }),
      complete: async () => ({ kind: "completed" }),
      fail: async () => ({ kind: "dead", attempt: 1, deadLetterId: "x" }),
      interrupt: async () => ({
        kind: "retrying",
        attempt: 1,
        nextRunAtMs: 0,
        tenantId: "t",
        taskId: "x",
      }),
      expireLeases: async () => [
        { tenantId: "t", taskId: "y", outcome: "retrying", nextRunAtMs: 1, released: [] },
      ],
    } as unknown as ExecutionStore;
    const store = new RecordingExecutionStore(inner, activity);
    const ref = {
      tenantId: "t",
      taskId: "x",
      fencingToken: "1",
      runAtMs: 1000,
      dispatchedAtMs: 1004,
    };
    await store.start(ref, "w", 1000, 1010);
    await store.complete(ref, "null", 1020);
    await store.fail(ref, { message: "m", retryable: false }, 1030);
    await store.interrupt(ref, { message: "m", retryable: true }, 1040);
    await store.expireLeases(1050, 10);
    const [bucket] = activity.snapshot(1060).get("t")!;
    expect(bucket).toMatchObject({ completed: 1, failed: 2, dead: 1 });
    expect(quantileMs(bucket!.start, 1)).toBe(upperMsOfBin(binOfMs(10)));
    expect(quantileMs(bucket!.publish, 1)).toBe(upperMsOfBin(binOfMs(4)));
  });
});

describe("tenant stats", () => {
  const bucket = (startMs: number, completed: number): ActivityBucket => ({
    startMs,
    completed,
    failed: 0,
    dead: 0,
    publish: {},
    start: { [String(binOfMs(20))]: completed },
  });

  it("sums every node's buckets per bucket of the window, and drops what is outside it", () => {
    const nowMs = 1_700_000_005_000;
    const last = Math.floor(nowMs / BUCKET_MS) * BUCKET_MS;
    const window = sumByBucket(
      [
        [bucket(last, 2), bucket(last - BUCKET_MS, 1)],
        [bucket(last, 3), bucket(last - WINDOW_BUCKETS * BUCKET_MS, 100), bucket(last + 7, 50)],
      ],
      nowMs,
    );
    expect(window).toHaveLength(WINDOW_BUCKETS);
    expect(window.at(-1)!.completed).toBe(5);
    expect(window.at(-2)!.completed).toBe(1);
    expect(window.reduce((sum, b) => sum + b.completed, 0)).toBe(6);
  });

  it("answers rates over the last full minute and caches per tenant for a second", async () => {
    const clock = new FakeClock(1_700_000_005_000);
    const last = Math.floor(clock.nowMs() / BUCKET_MS) * BUCKET_MS;
    let reads = 0;
    const store = {
      stats: async (_tenant: string, query: StatsQuery) => {
        reads++;
        expect(query.overdueBeforeMs).toBe(clock.nowMs() - DEFAULT_TENANT_LIMITS.graceMs);
        return {
          counts: {
            byState: [],
            countedRows: 0,
            capped: false,
            oldestCountedId: null,
            overdue: 0,
            openDeadLetters: 0,
          },
          // 60 completions in the minute before the current bucket, 500 in the current one.
          activity: [[bucket(last - BUCKET_MS, 60), bucket(last, 500)]],
          alerts: [],
        };
      },
    } as unknown as DashboardStore;
    const service = new TenantStatsService(store, clock);
    const principal = { tenantId: "t", apiKeyId: "k", limits: DEFAULT_TENANT_LIMITS, scopes: [] };
    const stats = await service.get(principal);
    expect(stats.completedPerS).toBe(1);
    expect(stats.completed).toBe(560);
    expect(stats.startLateness.count).toBe(560);
    await service.get(principal);
    expect(reads).toBe(1);
    clock.advance(1000);
    await service.get(principal);
    expect(reads).toBe(2);
  });
});
