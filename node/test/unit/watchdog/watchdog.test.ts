/**
 * The watchdog's own logic on an injected clock and a fake API port (the
 * end-to-end test against a stopped dispatcher needs workers to complete
 * canaries; it is pending until the worker role is merged).
 */
import { beforeEach, describe, expect, it } from "vitest";
import { CANARY_ALERT, Watchdog } from "../../../src/app/watchdog/watchdog.js";
import type { TaskStatus } from "../../../src/domain/task.js";
import type {
  Alert,
  AlertSink,
  WatchdogApi,
  WatchedScheduleView,
} from "../../../src/ports/watchdog.js";
import { FakeClock } from "../../support/fake-clock.js";

const SECOND = 1000;
const T0 = Date.parse("2026-06-01T00:00:00Z");

/** An API whose canaries complete only while `workersUp`, `runAfterMs` after submission. */
class FakeApi implements WatchdogApi {
  up = true;
  workersUp = true;
  readonly tasks = new Map<string, { submittedMs: number; completedMs: number | null }>();
  /** Canaries lost for good (never completed, whatever happens later). */
  readonly lost = new Set<string>();
  schedules: WatchedScheduleView[] = [];
  histories = new Map<string, Array<{ scheduledForMs: number; status: TaskStatus | null }>>();
  private seq = 0;

  constructor(private readonly clock: FakeClock) {}

  async submitCanary(_type: string, delayMs: number): Promise<string> {
    if (!this.up) throw new Error("connection refused");
    const id = `canary-${++this.seq}`;
    this.tasks.set(id, { submittedMs: this.clock.nowMs() + delayMs, completedMs: null });
    return id;
  }

  async taskStatus(taskId: string): Promise<TaskStatus> {
    if (!this.up) throw new Error("connection refused");
    const task = this.tasks.get(taskId)!;
    if (this.lost.has(taskId)) return "SCHEDULED";
    if (task.completedMs === null && this.workersUp && this.clock.nowMs() >= task.submittedMs) {
      task.completedMs = this.clock.nowMs();
    }
    return task.completedMs === null ? "SCHEDULED" : "COMPLETED";
  }

  async watchedSchedules(): Promise<WatchedScheduleView[]> {
    if (!this.up) throw new Error("connection refused");
    return this.schedules;
  }

  async history(scheduleId: string) {
    return this.histories.get(scheduleId) ?? [];
  }
}

class RecordingSink implements AlertSink {
  readonly events: Array<[string, string]> = [];
  async fire(alert: Alert): Promise<void> {
    this.events.push(["fire", alert.key]);
  }
  async resolve(alert: Alert): Promise<void> {
    this.events.push(["resolve", alert.key]);
  }
}

let clock: FakeClock;
let api: FakeApi;
let sink: RecordingSink;
let watchdog: Watchdog;

beforeEach(() => {
  clock = new FakeClock(T0);
  api = new FakeApi(clock);
  sink = new RecordingSink();
  watchdog = new Watchdog(
    api,
    sink,
    clock,
    {
      canaryType: "chronofence.canary",
      canaryIntervalMs: 60 * SECOND,
      canaryDelayMs: 5 * SECOND,
      canaryDeadlineMs: 120 * SECOND,
      historyLimit: 20,
      planAheadMs: 0,
    },
    () => undefined,
  );
});

/** Checks every 5 s for `seconds`. */
async function runFor(seconds: number): Promise<void> {
  for (let s = 0; s < seconds; s += 5) {
    await watchdog.check();
    clock.advance(5 * SECOND);
  }
}

describe("canaries", () => {
  it("stays quiet while canaries complete; submits one per interval", async () => {
    await runFor(600);
    expect(sink.events).toEqual([]);
    expect(api.tasks.size).toBe(10);
  });

  it("alerts once a canary is 120 s old and not COMPLETED, and clears when canaries succeed again", async () => {
    await runFor(60);
    api.workersUp = false; // e.g. the dispatcher is stopped (SIGSTOP)
    await runFor(115);
    expect(sink.events).toEqual([]); // the stuck canary is not yet 120 s old
    await runFor(10);
    expect(sink.events).toEqual([["fire", CANARY_ALERT]]);
    expect(watchdog.alerts.get(CANARY_ALERT)!.message).toMatch(/not COMPLETED within 120000 ms/);
    await runFor(300);
    expect(sink.events).toHaveLength(1); // fired once, not at every check

    api.workersUp = true; // SIGCONT
    await runFor(70);
    expect(sink.events).toEqual([
      ["fire", CANARY_ALERT],
      ["resolve", CANARY_ALERT],
    ]);
  });

  it("clears even when a canary lost during the outage never completes", async () => {
    await runFor(60);
    api.workersUp = false;
    await runFor(200);
    expect(sink.events).toEqual([["fire", CANARY_ALERT]]);
    for (const id of api.tasks.keys()) api.lost.add(id);
    api.workersUp = true;
    await runFor(130);
    expect(sink.events.at(-1)).toEqual(["resolve", CANARY_ALERT]);
  });

  it("an API that refuses submissions alerts too", async () => {
    api.up = false;
    await runFor(125);
    expect(sink.events).toEqual([["fire", CANARY_ALERT]]);
    expect(watchdog.alerts.get(CANARY_ALERT)!.details.task_id).toBeNull();
    api.up = true;
    await runFor(70);
    expect(sink.events.at(-1)).toEqual(["resolve", CANARY_ALERT]);
  });
});

describe("dead man's switch", () => {
  const schedule: WatchedScheduleView = {
    id: "sched-1",
    name: "nightly-ledger",
    expression: "0 * * * *",
    timeZone: "UTC",
    jitterMs: 0,
    expectWithinMs: 10 * 60 * SECOND,
    paused: false,
    createdAtMs: T0 + 1, // just after 00:00: the first expected run is 01:00
    updatedAtMs: T0 + 1,
  };

  it("trips when the latest due occurrence has not completed in time, and clears when it does", async () => {
    api.schedules = [schedule];
    clock.set(T0 + 3600 * SECOND + 5 * 60 * SECOND); // 01:05: the 01:00 run is not due for the check yet
    api.histories.set("sched-1", [{ scheduledForMs: T0 + 3600 * SECOND, status: "RUNNING" }]);
    await watchdog.check();
    expect(sink.events.filter(([, k]) => k !== CANARY_ALERT)).toEqual([]);

    clock.set(T0 + 3600 * SECOND + 10 * 60 * SECOND); // 01:10: 10 minutes after, still RUNNING
    await watchdog.check();
    expect(sink.events).toContainEqual(["fire", "schedule:sched-1"]);
    expect(watchdog.alerts.get("schedule:sched-1")!.message).toMatch(
      /nightly-ledger: the occurrence of 2026-06-01T01:00:00.000Z has not completed within 600000 ms \(RUNNING\)/,
    );

    api.histories.set("sched-1", [{ scheduledForMs: T0 + 3600 * SECOND, status: "COMPLETED" }]);
    await watchdog.check();
    expect(sink.events).toContainEqual(["resolve", "schedule:sched-1"]);
  });

  it("trips when no occurrence was recorded at all (the planner stopped)", async () => {
    api.schedules = [schedule];
    clock.set(T0 + 3600 * SECOND + 11 * 60 * SECOND);
    await watchdog.check();
    expect(watchdog.alerts.get("schedule:sched-1")!.message).toMatch(/no run recorded/);
  });

  it("does not trip for a paused schedule, or for occurrences before its last change", async () => {
    api.schedules = [{ ...schedule, paused: true }];
    clock.set(T0 + 3600 * SECOND + 11 * 60 * SECOND);
    await watchdog.check();
    api.schedules = [{ ...schedule, updatedAtMs: T0 + 3600 * SECOND + 1 }];
    await watchdog.check();
    expect(sink.events.filter(([, k]) => k !== CANARY_ALERT)).toEqual([]);
  });
});
