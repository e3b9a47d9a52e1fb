/** Prometheus metrics of the dispatcher, pre-loader, reconciler and leases (prom-client). */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { DispatchMetrics } from "../../ports/dispatch-metrics.js";

export class PromDispatchMetrics implements DispatchMetrics {
  readonly registry = new Registry();
  private readonly counter = (name: string, help: string, labelNames: string[] = []) =>
    new Counter({ name, help, labelNames, registers: [this.registry] });

  private readonly lateness = new Histogram({
    name: "cf_dispatch_lateness_seconds",
    help: "From a task's run_at to the broker's ack of its envelope, by topic kind",
    labelNames: ["kind"],
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60],
    registers: [this.registry],
  });
  private readonly wheel = new Gauge({
    name: "cf_dispatch_wheel_size",
    help: "Armed tasks waiting in the shard's timing wheel",
    labelNames: ["shard"],
    registers: [this.registry],
  });
  private readonly claims = this.counter("cf_dispatch_claims_total", "Ids claimed from Redis", [
    "shard",
  ]);
  private readonly arms = this.counter(
    "cf_dispatch_arms_total",
    "Tasks armed (new fencing token)",
    ["shard"],
  );
  private readonly stale = this.counter(
    "cf_dispatch_stale_epoch_rejections_total",
    "Writes (db: arm UPDATEs that changed 0 rows) or publishes (local) refused because the shard epoch was no longer ours",
    ["shard", "where"],
  );
  private readonly overdueTotal = this.counter(
    "cf_dispatch_overdue_total",
    "Envelopes sent to tasks.overdue",
  );
  private readonly failed = this.counter(
    "cf_dispatch_publish_failures_total",
    "Envelopes whose produce request failed (retried)",
  );
  private readonly undeliverableTotal = this.counter(
    "cf_dispatch_undeliverable_total",
    "Tasks made DEAD because the broker can never accept their envelope (too large)",
  );
  private readonly cancelled = this.counter(
    "cf_dispatch_cancelled_dropped_total",
    "Cancelled tasks dropped from a wheel",
  );
  private readonly leases = this.counter(
    "cf_lease_events_total",
    "Lease acquisitions, losses and releases",
    ["lease", "event"],
  );
  private readonly rearms = this.counter(
    "cf_reconcile_rearmed_total",
    "ARMED tasks nobody started, re-armed",
  );
  private readonly expired = this.counter(
    "cf_reconcile_leases_expired_total",
    "RUNNING tasks whose execution lease expired, failed by the reconciler, by what followed",
    ["outcome"],
  );
  private readonly rehydrations = this.counter(
    "cf_reconcile_rehydrated_total",
    "SCHEDULED tasks re-added to Redis",
  );
  private readonly returned = this.counter("cf_claims_returned_total", "Claims returned to due");
  private readonly preloads = this.counter(
    "cf_preload_entries_total",
    "Entries (re-)added by the pre-loader",
  );

  constructor(options: { defaultMetrics: boolean }) {
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: "cf_" });
  }

  claimed(shard: number, count: number): void {
    this.claims.inc({ shard: String(shard) }, count);
  }
  armed(shard: number, count: number): void {
    this.arms.inc({ shard: String(shard) }, count);
  }
  staleEpochRejected(shard: number, claims: number, where: "db" | "local"): void {
    this.stale.inc({ shard: String(shard), where }, claims);
  }
  published(kind: string, latenessMs: number): void {
    this.lateness.observe({ kind }, latenessMs / 1000);
  }
  overdue(): void {
    this.overdueTotal.inc();
  }
  publishFailed(count: number): void {
    this.failed.inc(count);
  }
  undeliverable(count: number): void {
    this.undeliverableTotal.inc(count);
  }
  cancelledDropped(count: number): void {
    this.cancelled.inc(count);
  }
  wheelSize(shard: number, size: number): void {
    this.wheel.set({ shard: String(shard) }, size);
  }
  leaseAcquired(name: string): void {
    this.leases.inc({ lease: leaseLabel(name), event: "acquired" });
  }
  leaseLost(name: string): void {
    this.leases.inc({ lease: leaseLabel(name), event: "lost" });
  }
  leaseReleased(name: string): void {
    this.leases.inc({ lease: leaseLabel(name), event: "released" });
  }
  rearmed(count: number): void {
    this.rearms.inc(count);
  }
  leasesExpired(retried: number, dead: number): void {
    this.expired.inc({ outcome: "retrying" }, retried);
    this.expired.inc({ outcome: "dead" }, dead);
  }
  rehydrated(count: number): void {
    this.rehydrations.inc(count);
  }
  claimsReturned(count: number): void {
    this.returned.inc(count);
  }
  preloaded(count: number): void {
    this.preloads.inc(count);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** Membership leases carry node ids: one label value for all of them keeps cardinality bounded. */
const leaseLabel = (name: string): string => (name.startsWith("node:") ? "node" : name);
