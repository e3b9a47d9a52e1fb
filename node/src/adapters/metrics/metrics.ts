/** Prometheus metrics for the API role (prom-client), on a registry of their own. */
import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";
import type { IngestMetrics } from "../../ports/ingest-metrics.js";

export class ApiMetrics implements IngestMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: "cf_http_requests_total",
    help: "HTTP requests answered, by route and status",
    labelNames: ["route", "status"] as const,
    registers: [this.registry],
  });
  private readonly commitRows = new Histogram({
    name: "cf_group_commit_rows",
    help: "Tasks per group commit",
    buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000],
    registers: [this.registry],
  });
  private readonly commitSeconds = new Histogram({
    name: "cf_group_commit_duration_seconds",
    help: "Latency of one group commit (INSERT + COMMIT), by outcome",
    labelNames: ["outcome"] as const,
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  private readonly rateLimitedTasks = new Counter({
    name: "cf_rate_limited_tasks_total",
    help: "Tasks rejected with 429 by the per-tenant token bucket",
    registers: [this.registry],
  });
  private readonly rateLimitedRequests = new Counter({
    name: "cf_rate_limited_requests_total",
    help: "Requests rejected with 429 by the per-tenant token bucket",
    registers: [this.registry],
  });
  private readonly hotTierEntries = new Counter({
    name: "cf_hot_tier_adds_total",
    help: "Task ids added to the Redis hot tier after commit, by outcome",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });

  constructor(options: { defaultMetrics: boolean }) {
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: "cf_" });
  }

  request(route: string, status: number): void {
    this.requests.inc({ route, status: String(status) });
  }

  groupCommit(rows: number, durationMs: number, ok: boolean): void {
    this.commitRows.observe(rows);
    this.commitSeconds.observe({ outcome: ok ? "ok" : "error" }, durationMs / 1000);
  }

  rateLimited(tasks: number): void {
    this.rateLimitedRequests.inc();
    this.rateLimitedTasks.inc(tasks);
  }

  hotTierAdded(entries: number, ok: boolean): void {
    this.hotTierEntries.inc({ outcome: ok ? "ok" : "error" }, entries);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
