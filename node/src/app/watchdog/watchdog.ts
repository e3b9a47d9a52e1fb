/**
 * The watchdog (`chronofence watchdog`): a separate process that talks to
 * the API over HTTP, so it sees what a user sees. Each check submits a
 * canary when one is due, asks how the outstanding canaries are doing,
 * evaluates every schedule's dead man's switch, and tells the alert sink
 * about alerts that start or stop (domain/watchdog.ts decides which).
 */
import { CronSchedule } from "../../domain/cron.js";
import { CanaryMonitor, deadMansSwitch } from "../../domain/watchdog.js";
import type { Clock } from "../../ports/clock.js";
import type { Alert, AlertSink, WatchdogApi } from "../../ports/watchdog.js";
import { MAX_HISTORY } from "../schedules/schedules.js";

export interface WatchdogOptions {
  canaryType: string;
  canaryIntervalMs: number;
  canaryDelayMs: number;
  canaryDeadlineMs: number;
  historyLimit: number;
  /**
   * The planner's look-ahead (CF_CRON_PLAN_AHEAD_MS): the newest occurrences of a schedule are
   * the ones planned ahead, so this many more are read to reach the ones already due.
   */
  planAheadMs: number;
}

export const CANARY_ALERT = "canary";

export class Watchdog {
  private readonly canaries: CanaryMonitor;
  private readonly firing = new Map<string, Alert>();
  private lastCanaryMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly api: WatchdogApi,
    private readonly sink: AlertSink,
    private readonly clock: Clock,
    private readonly options: WatchdogOptions,
    private readonly onError: (error: unknown, what: string) => void,
  ) {
    this.canaries = new CanaryMonitor(options.canaryDeadlineMs);
  }

  /** The alerts firing now, by key. */
  get alerts(): ReadonlyMap<string, Alert> {
    return this.firing;
  }

  async check(): Promise<void> {
    await this.submitCanaryIfDue();
    await this.observeCanaries();
    const now = [this.canaryAlert()];
    const schedules = await this.scheduleAlerts().catch((error: unknown) => {
      this.onError(error, "dead man's switch check");
      return null; // keep the schedule alerts as they were: the API did not answer
    });
    const keep =
      schedules ?? [...this.firing.values()].filter((a) => a.kind === "dead_mans_switch");
    await this.transition([...now, ...keep].filter((a): a is Alert => a !== null));
  }

  private async submitCanaryIfDue(): Promise<void> {
    const nowMs = this.clock.nowMs();
    if (nowMs - this.lastCanaryMs < this.options.canaryIntervalMs) return;
    this.lastCanaryMs = nowMs;
    try {
      const id = await this.api.submitCanary(this.options.canaryType, this.options.canaryDelayMs);
      this.canaries.submitted(id, nowMs);
    } catch (error) {
      this.onError(error, "canary submission");
      this.canaries.submitted(null, nowMs);
    }
  }

  private async observeCanaries(): Promise<void> {
    for (const taskId of this.canaries.pending()) {
      const status = await this.api.taskStatus(taskId).catch((error: unknown) => {
        this.onError(error, "canary status");
        return null;
      });
      if (status === "COMPLETED") this.canaries.completed(taskId);
    }
  }

  private canaryAlert(): Alert | null {
    const overdue = this.canaries.overdue(this.clock.nowMs());
    if (overdue === null) return null;
    return {
      key: CANARY_ALERT,
      kind: "canary",
      message: `canary task not COMPLETED within ${this.options.canaryDeadlineMs} ms`,
      details: { task_id: overdue.taskId, age_ms: overdue.ageMs },
    };
  }

  private async scheduleAlerts(): Promise<Alert[]> {
    const alerts: Alert[] = [];
    const nowMs = this.clock.nowMs();
    for (const s of await this.api.watchedSchedules()) {
      const cron = CronSchedule.parse(s.expression, s.timeZone);
      const { historyLimit, planAheadMs } = this.options;
      const plannedAhead = cron.between(nowMs, nowMs + planAheadMs, MAX_HISTORY).length;
      const limit = Math.min(MAX_HISTORY, historyLimit + plannedAhead);
      const history = await this.api.history(s.id, limit);
      const tripped = deadMansSwitch(
        {
          id: s.id,
          name: s.name,
          cron,
          jitterMs: s.jitterMs,
          expectWithinMs: s.expectWithinMs,
          paused: s.paused,
          sinceMs: Math.max(s.createdAtMs, s.updatedAtMs),
        },
        history,
        nowMs,
      );
      if (tripped === null) continue;
      const when = new Date(tripped.scheduledForMs).toISOString();
      alerts.push({
        key: `schedule:${s.id}`,
        kind: "dead_mans_switch",
        message: `schedule ${s.name}: the occurrence of ${when} has not completed within ${s.expectWithinMs} ms (${tripped.status ?? "no run recorded"})`,
        details: { schedule_id: s.id, scheduled_for: when, status: tripped.status },
      });
    }
    return alerts;
  }

  /** Fires what is new, resolves what stopped; a sink failure is retried at the next check. */
  private async transition(current: Alert[]): Promise<void> {
    const keys = new Set(current.map((a) => a.key));
    for (const alert of current) {
      if (this.firing.has(alert.key)) continue;
      await this.sink.fire(alert).then(
        () => this.firing.set(alert.key, alert),
        (error: unknown) => this.onError(error, "alert"),
      );
    }
    for (const [key, alert] of this.firing) {
      if (keys.has(key)) continue;
      await this.sink.resolve(alert).then(
        () => this.firing.delete(key),
        (error: unknown) => this.onError(error, "resolve alert"),
      );
    }
  }
}
