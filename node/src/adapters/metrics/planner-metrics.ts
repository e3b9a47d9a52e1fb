/** Prometheus metrics of the cron planner, registered beside the lease metrics. */
import { Counter, type Registry } from "prom-client";
import type { PlannerMetrics } from "../../ports/planner-metrics.js";

export class PromPlannerMetrics implements PlannerMetrics {
  private readonly occurrences: Counter;
  private readonly misfires: Counter;
  private readonly releases: Counter;
  private readonly stale: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.occurrences = new Counter({
      name: "cf_cron_occurrences_total",
      help: "Occurrences decided by the planner, by outcome (planned, buffered, skipped_overlap)",
      labelNames: ["outcome"],
      registers,
    });
    this.misfires = new Counter({
      name: "cf_cron_misfires_total",
      help: "Planner passes that found missed occurrences of a schedule, by misfire policy",
      labelNames: ["policy"],
      registers,
    });
    this.releases = new Counter({
      name: "cf_cron_buffered_released_total",
      help: "Buffered occurrences released after the previous run finished",
      registers,
    });
    this.stale = new Counter({
      name: "cf_cron_stale_lease_total",
      help: "Planner writes refused because the plan lease was no longer ours",
      registers,
    });
  }

  planned(outcome: string, count: number): void {
    this.occurrences.inc({ outcome }, count);
  }
  misfired(policy: string): void {
    this.misfires.inc({ policy });
  }
  released(count: number): void {
    this.releases.inc(count);
  }
  staleLease(): void {
    this.stale.inc();
  }
}
