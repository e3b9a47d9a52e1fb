/** The watchdog's API port over HTTP: the same endpoints any user calls. */
import type { TaskStatus } from "../../domain/task.js";
import type { WatchdogApi, WatchedScheduleView } from "../../ports/watchdog.js";
import type { ApiClient } from "./api-client.js";

export class HttpWatchdogApi implements WatchdogApi {
  constructor(private readonly client: ApiClient) {}

  async submitCanary(type: string, delayMs: number): Promise<string> {
    const task = await this.client.request("POST", "/v1/tasks", {
      type,
      delay_ms: delayMs,
      priority: "critical",
      payload: { canary: true },
    });
    return task.id;
  }

  async taskStatus(taskId: string): Promise<TaskStatus> {
    return (await this.client.request("GET", `/v1/tasks/${taskId}`)).status;
  }

  async watchedSchedules(): Promise<WatchedScheduleView[]> {
    const watched: WatchedScheduleView[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor === null ? "" : `&cursor=${cursor}`;
      const page = await this.client.request("GET", `/v1/schedules?limit=1000${query}`);
      for (const s of page.schedules) {
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
      cursor = page.next_cursor;
    } while (cursor !== null);
    return watched;
  }

  async history(scheduleId: string, limit: number) {
    const view = await this.client.request("GET", `/v1/schedules/${scheduleId}?history=${limit}`);
    return (view.history as Array<{ scheduled_for: string; status: TaskStatus | null }>).map(
      (o) => ({ scheduledForMs: Date.parse(o.scheduled_for), status: o.status }),
    );
  }
}
