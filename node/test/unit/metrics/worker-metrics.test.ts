/** The worker's /metrics: loopback unless configured otherwise, and label sets of bounded size. */
import { describe, expect, it } from "vitest";
import { startMetricsServer } from "../../../src/adapters/http/metrics-server.js";
import { OTHER } from "../../../src/adapters/metrics/label-cap.js";
import { PromWorkerMetrics } from "../../../src/adapters/metrics/worker-metrics.js";
import { resolveConfig } from "../../../src/config/config.js";

/** The distinct values of `label` among the series of `metric`. */
function labelValues(text: string, metric: string, label: string): Set<string> {
  const values = new Set<string>();
  const pattern = new RegExp(`^${metric}\\{[^}]*${label}="([^"]*)"`, "gm");
  for (const match of text.matchAll(pattern)) values.add(match[1]!);
  return values;
}

describe("worker metrics", () => {
  it("labels the first N tenants and types as themselves and the rest as other", async () => {
    const metrics = new PromWorkerMetrics({ defaultMetrics: false, maxLabelValues: 5 });
    for (let i = 0; i < 1000; i++) {
      metrics.inFlight(`tenant-${i}`, 1);
      metrics.outcome(`type-${i}`, "completed");
      metrics.ran(`type-${i}`, 1);
      metrics.retried(`type-${i}`);
      metrics.deadLettered(`type-${i}`);
    }
    for (let i = 0; i < 1000; i++) metrics.inFlight(`tenant-${i}`, -1);
    const { body } = await metrics.render();
    const tenants = labelValues(body, "cf_worker_in_flight", "tenant");
    expect(tenants).toEqual(
      new Set(["tenant-0", "tenant-1", "tenant-2", "tenant-3", "tenant-4", OTHER]),
    );
    for (const metric of [
      "cf_worker_outcomes_total",
      "cf_worker_run_seconds_count",
      "cf_worker_retries_total",
      "cf_worker_dead_letters_total",
    ]) {
      expect(labelValues(body, metric, "type").size, metric).toBe(6);
    }
    // A capped gauge still balances: every +1 met its -1 on the same series.
    expect(body).toMatch(/^cf_worker_in_flight\{tenant="other"\} 0$/m);
  });

  it("listens on loopback by default", async () => {
    const config = resolveConfig({});
    expect(config.metricsHost).toBe("127.0.0.1");
    const metrics = new PromWorkerMetrics({ defaultMetrics: false });
    const server = await startMetricsServer(metrics, config.metricsHost, 0);
    try {
      expect(server.address).toBe("127.0.0.1");
      expect(resolveConfig({ CF_METRICS_HOST: "0.0.0.0" }).metricsHost).toBe("0.0.0.0");
    } finally {
      await server.close();
    }
  });
});
