/**
 * Composition root of `chronofence watchdog`: a process apart from the
 * scheduler that reaches it only through the HTTP API (CF_API_URL with
 * CF_API_KEY, a tenant of its own), and exposes its alerts on /metrics.
 */
import {
  AllAlertSinks,
  GaugeAlertSink,
  LogAlertSink,
  WebhookAlertSink,
} from "../adapters/alerts/alert-sinks.js";
import { ApiAlertSink } from "../adapters/alerts/api-alert-sink.js";
import { startMetricsServer } from "../adapters/http/metrics-server.js";
import { HttpWatchdogApi } from "../adapters/http/watchdog-api.js";
import type { Logger } from "../adapters/logging/logger.js";
import { PromDispatchMetrics } from "../adapters/metrics/dispatch-metrics.js";
import { Loop } from "../app/shared/loop.js";
import { Watchdog } from "../app/watchdog/watchdog.js";
import { ChronofenceClient } from "../client/client.js";
import type { Config } from "../config/config.js";
import type { Clock } from "../ports/clock.js";
import type { AlertSink } from "../ports/watchdog.js";

export interface RunningWatchdog {
  metricsPort: number;
  stop(): Promise<void>;
}

export async function startWatchdog(
  config: Config,
  clock: Clock,
  logger: Logger,
): Promise<RunningWatchdog> {
  if (config.apiKey === undefined) throw new Error("the watchdog needs CF_API_KEY");
  const log = logger.child({ role: "watchdog" });
  const client = new ChronofenceClient({
    url: config.apiUrl,
    apiKey: config.apiKey,
    timeoutMs: Math.min(10_000, config.watchdogCheckIntervalMs * 2),
    // The next check tries again: a rate-limited canary must not hold up the loop.
    maxRetries: 0,
  });
  // Only the process metrics and the alert gauge; PromDispatchMetrics brings the registry.
  const metrics = new PromDispatchMetrics({ defaultMetrics: true });
  const sinks: AlertSink[] = [new LogAlertSink(log), new GaugeAlertSink(metrics.registry)];
  if (config.watchdogWebhookUrl !== undefined) {
    sinks.push(new WebhookAlertSink(config.watchdogWebhookUrl, 5000));
  }
  // The dashboard's view of the alerts; never fails a transition (api-alert-sink.ts).
  const dashboardSink = new ApiAlertSink(client, (error) =>
    log.warn({ err: error }, "alert report to the API failed; sent again at the next check"),
  );
  sinks.push(dashboardSink);
  const watchdog = new Watchdog(
    new HttpWatchdogApi(client),
    new AllAlertSinks(sinks),
    clock,
    {
      canaryType: "chronofence.canary",
      canaryIntervalMs: config.watchdogCanaryIntervalMs,
      canaryDelayMs: config.watchdogCanaryDelayMs,
      canaryDeadlineMs: config.watchdogCanaryDeadlineMs,
      historyLimit: 20,
      planAheadMs: config.cronPlanAheadMs,
    },
    (error, what) => log.warn({ err: error }, `${what} failed`),
  );
  const loop = new Loop(
    async () => {
      await dashboardSink.flush(); // before the check: a newer report then replaces it
      await watchdog.check();
      return false;
    },
    config.watchdogCheckIntervalMs,
    (error) => log.warn({ err: error }, "watchdog check failed"),
  ).start();
  const server = await startMetricsServer(metrics, config.metricsHost, config.metricsPort);
  log.info({ apiUrl: config.apiUrl, metricsPort: server.port }, "watchdog running");
  return {
    metricsPort: server.port,
    async stop() {
      await loop.stop();
      await server.close();
    },
  };
}
