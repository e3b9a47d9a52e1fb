/**
 * Prometheus metrics of the worker role (prom-client). Tenant ids and task
 * types label some series; each label keeps its first `maxLabelValues`
 * values and counts the rest as "other" (label-cap.ts).
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type {
  MalformedReason,
  StaleAt,
  WorkerMetrics,
  WorkerOutcome,
} from "../../ports/worker-metrics.js";
import { LabelCap } from "./label-cap.js";

export interface WorkerMetricsOptions {
  defaultMetrics: boolean;
  /** Distinct tenant ids, and distinct task types, labelled as themselves (default 100). */
  maxLabelValues?: number;
}

export class PromWorkerMetrics implements WorkerMetrics {
  readonly registry = new Registry();
  private readonly tenants: LabelCap;
  private readonly types: LabelCap;
  private readonly counter = (name: string, help: string, labelNames: string[] = []) =>
    new Counter({ name, help, labelNames, registers: [this.registry] });

  private readonly lateness = new Histogram({
    name: "cf_worker_start_lateness_seconds",
    help: "From a task's run_at to its fenced start by a worker, by queue",
    labelNames: ["queue"],
    buckets: [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });
  private readonly runTime = new Histogram({
    name: "cf_worker_run_seconds",
    help: "Handler run time, by task type",
    labelNames: ["type"],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 3600],
    registers: [this.registry],
  });
  private readonly inFlightGauge = new Gauge({
    name: "cf_worker_in_flight",
    help: "Tasks running in this worker, by tenant",
    labelNames: ["tenant"],
    registers: [this.registry],
  });
  private readonly outcomes = this.counter(
    "cf_worker_outcomes_total",
    "Envelopes handled, by task type and outcome",
    ["type", "outcome"],
  );
  private readonly stale = this.counter(
    "cf_worker_stale_token_total",
    "Fenced writes refused (0 rows): the token was no longer current, by call",
    ["at"],
  );
  private readonly retries = this.counter("cf_worker_retries_total", "Attempts scheduled again", [
    "type",
  ]);
  private readonly dead = this.counter("cf_worker_dead_letters_total", "Tasks dead-lettered", [
    "type",
  ]);
  private readonly malformedTotal = this.counter(
    "cf_worker_malformed_messages_total",
    "Messages that were not envelopes (skipped), by queue and why",
    ["queue", "reason"],
  );
  private readonly noHandlerTotal = this.counter(
    "cf_worker_no_handler_total",
    "Envelopes of a type no handler here serves (handed back, then dead after CF_WORKER_UNKNOWN_TYPE_DEAD_AFTER_MS)",
    ["type"],
  );
  private readonly leaseDeadlines = this.counter(
    "cf_worker_lease_deadline_total",
    "Running attempts aborted: their execution lease could not be renewed before its local deadline",
  );
  private readonly dependency = this.counter(
    "cf_worker_dependency_retries_total",
    "Calls to a dependency retried because it was unavailable",
    ["call"],
  );

  private readonly consumerUpGauge = new Gauge({
    name: "cf_worker_consumer_up",
    help: "1 while a queue's Kafka consumer is in its group, 0 from a crash until its restart joins",
    labelNames: ["queue"],
    registers: [this.registry],
  });
  private readonly consumerCrashes = this.counter(
    "cf_worker_consumer_crashes_total",
    "Kafka consumer crashes (each restarted), by queue",
    ["queue"],
  );

  constructor(options: WorkerMetricsOptions) {
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: "cf_" });
    this.tenants = new LabelCap(options.maxLabelValues ?? 100);
    this.types = new LabelCap(options.maxLabelValues ?? 100);
  }

  started(queue: string, latenessMs: number): void {
    this.lateness.observe({ queue }, latenessMs / 1000);
  }
  ran(type: string, durationMs: number): void {
    this.runTime.observe({ type: this.types.of(type) }, durationMs / 1000);
  }
  outcome(type: string, outcome: WorkerOutcome): void {
    this.outcomes.inc({ type: this.types.of(type), outcome });
  }
  staleToken(at: StaleAt): void {
    this.stale.inc({ at });
  }
  retried(type: string): void {
    this.retries.inc({ type: this.types.of(type) });
  }
  deadLettered(type: string): void {
    this.dead.inc({ type: this.types.of(type) });
  }
  inFlight(tenantId: string, delta: 1 | -1): void {
    this.inFlightGauge.inc({ tenant: this.tenants.of(tenantId) }, delta);
  }
  malformed(queue: string, reason: MalformedReason): void {
    this.malformedTotal.inc({ queue, reason });
  }
  noHandler(type: string): void {
    this.noHandlerTotal.inc({ type: this.types.of(type) });
  }
  leaseDeadlinePassed(): void {
    this.leaseDeadlines.inc();
  }
  dependencyRetry(call: string): void {
    this.dependency.inc({ call });
  }
  consumerUp(queue: string, up: boolean): void {
    this.consumerUpGauge.set({ queue }, up ? 1 : 0);
    if (!up) this.consumerCrashes.inc({ queue });
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
