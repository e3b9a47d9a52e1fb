/**
 * Where the watchdog's alerts go: an error log line, a POST to a webhook,
 * and a Prometheus gauge (1 while firing, 0 once resolved). All three see
 * every transition; a webhook failure is reported to the caller, which
 * retries the transition at its next check.
 */
import { Gauge, type Registry } from "prom-client";
import type { Alert, AlertSink } from "../../ports/watchdog.js";
import type { Logger } from "../logging/logger.js";

export class LogAlertSink implements AlertSink {
  constructor(private readonly logger: Logger) {}
  async fire(alert: Alert): Promise<void> {
    this.logger.error({ alert: alert.key, kind: alert.kind, ...alert.details }, alert.message);
  }
  async resolve(alert: Alert): Promise<void> {
    this.logger.info({ alert: alert.key, kind: alert.kind }, `resolved: ${alert.message}`);
  }
}

export class GaugeAlertSink implements AlertSink {
  private readonly gauge: Gauge;
  constructor(registry: Registry) {
    this.gauge = new Gauge({
      name: "cf_watchdog_alert",
      help: "1 while a watchdog alert fires (canary, or a schedule's dead man's switch), else 0",
      labelNames: ["alert", "kind"],
      registers: [registry],
    });
    this.gauge.set({ alert: "canary", kind: "canary" }, 0);
  }
  async fire(alert: Alert): Promise<void> {
    this.gauge.set({ alert: alert.key, kind: alert.kind }, 1);
  }
  async resolve(alert: Alert): Promise<void> {
    this.gauge.set({ alert: alert.key, kind: alert.kind }, 0);
  }
}

export class WebhookAlertSink implements AlertSink {
  constructor(
    private readonly url: string,
    private readonly timeoutMs: number,
  ) {}
  fire(alert: Alert): Promise<void> {
    return this.post(alert, "firing");
  }
  resolve(alert: Alert): Promise<void> {
    return this.post(alert, "resolved");
  }
  private async post(alert: Alert, state: string): Promise<void> {
    const response = await fetch(this.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...alert, state, at: new Date().toISOString() }),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    if (!response.ok) throw new Error(`webhook answered ${response.status}`);
  }
}

/** Every sink in turn; the first failure fails the transition (so it is retried). */
export class AllAlertSinks implements AlertSink {
  constructor(private readonly sinks: AlertSink[]) {}
  async fire(alert: Alert): Promise<void> {
    for (const sink of this.sinks) await sink.fire(alert);
  }
  async resolve(alert: Alert): Promise<void> {
    for (const sink of this.sinks) await sink.resolve(alert);
  }
}
