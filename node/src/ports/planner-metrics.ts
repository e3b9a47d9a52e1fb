/** What the cron planner counts (adapters/metrics/planner-metrics.ts exports it to Prometheus). */
export interface PlannerMetrics {
  planned(outcome: string, count: number): void;
  misfired(policy: string): void;
  released(count: number): void;
  staleLease(): void;
}
