/** The watchdog's API port over HTTP: the same endpoints any user calls, through the typed client. */
import type { ChronofenceClient } from "../../client/client.js";
import type { TaskStatus } from "../../domain/task.js";
import type { WatchdogApi, WatchedScheduleView } from "../../ports/watchdog.js";

export class HttpWatchdogApi implements WatchdogApi {
  constructor(private readonly client: ChronofenceClient) {}

  async submitCanary(type: string, delayMs: number): Promise<string> {
    const task = await this.client.tasks.submit({
      type,
      delay_ms: delayMs,
      priority: "critical",
      payload: { canary: true },
    });
    return task.id;
  }

  async taskStatus(taskId: string): Promise<TaskStatus> {
    return (await this.client.tasks.get(taskId)).status;
  }

  async watchedSchedules(): Promise<WatchedScheduleView[]> {
    const watched: WatchedScheduleView[] = [];
    for await (const s of this.client.schedules.list({ limit: 1000 })) {
      if (s.expect_within_ms === null) continue;
      watched.push({
        id: s.id,
        name: s.name,
        expression: s.expression,
        timeZone: s.time_zone,
        jitterMs: s.jitter_ms,
        expectWithinMs: s.expect_within_ms,
        paused: s.paused,
        createdAtMs: Date.parse(s.created_at),
        updatedAtMs: Date.parse(s.updated_at),
      });
    }
    return watched;
  }

  async history(scheduleId: string, limit: number) {
    const view = await this.client.schedules.get(scheduleId, { history: limit });
    return view.history.map((o) => ({
      scheduledForMs: Date.parse(o.scheduled_for),
      status: o.status,
    }));
  }
}
