/**
 * Reports the watchdog's alert transitions to the API (POST
 * /v1/watchdog/alerts, with the watchdog's own key), where the dashboard
 * shows them: the tenant's Overview, and every tenant's on the operator's
 * cluster page.
 *
 * It never fails a transition: the API being down is exactly when the canary
 * alert fires, and the log, gauge and webhook sinks must not wait for it. A
 * report that did not land is kept (the latest per alert) and sent again by
 * `flush()`, which the watchdog's composition root calls every check.
 */

import type { ChronofenceClient } from "../../client/client.js";
import type { Alert, AlertSink } from "../../ports/watchdog.js";

interface Report {
  key: string;
  kind: Alert["kind"];
  state: "firing" | "resolved";
  message: string;
  details: Record<string, unknown>;
}

export class ApiAlertSink implements AlertSink {
  private readonly pending = new Map<string, Report>();

  constructor(
    private readonly client: ChronofenceClient,
    private readonly onError: (error: unknown) => void,
  ) {}

  fire(alert: Alert): Promise<void> {
    return this.send(reportOf(alert, "firing"));
  }

  resolve(alert: Alert): Promise<void> {
    return this.send(reportOf(alert, "resolved"));
  }

  /** Sends again what did not land, oldest first; stops at the first failure. */
  async flush(): Promise<void> {
    for (const report of [...this.pending.values()]) {
      if (!(await this.post(report))) return;
    }
  }

  private async send(report: Report): Promise<void> {
    this.pending.set(report.key, report);
    await this.post(report);
  }

  private async post(report: Report): Promise<boolean> {
    try {
      await this.client.watchdog.reportAlert(report);
      if (this.pending.get(report.key) === report) this.pending.delete(report.key);
      return true;
    } catch (error) {
      this.onError(error);
      return false;
    }
  }
}

const reportOf = (alert: Alert, state: Report["state"]): Report => ({
  key: alert.key,
  kind: alert.kind,
  state,
  message: alert.message.slice(0, 4096),
  details: alert.details,
});
