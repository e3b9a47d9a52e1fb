/**
 * What the Schedules page shows beside a schedule's definition and history
 * (GET /v1/schedules/{id}/upcoming): its next fire instants, computed by the
 * same cron rules the planner uses (domain/cron.ts: daylight saving as Vixie
 * cron does it), each also as local time with its offset in the schedule's
 * zone; and the state of its dead man's switch, judged as the watchdog
 * judges it (domain/watchdog.ts) from the recorded history.
 */
import { CronSchedule } from "../../domain/cron.js";
import type { Principal } from "../../domain/tenant.js";
import { offsetMsAt } from "../../domain/time-zone.js";
import { deadMansSwitch } from "../../domain/watchdog.js";
import type { Clock } from "../../ports/clock.js";
import type { ScheduleService } from "../schedules/schedules.js";
import { UpcomingQuery } from "./dashboard-requests.js";
import { parseQuery } from "./query-params.js";

/** Enough history for the switch: the watchdog reads 20 plus what is planned ahead. */
const HISTORY = 100;

export interface FireInstant {
  atMs: number;
  /** Local time in the schedule's zone with its offset, e.g. 2026-03-29T03:00:00+02:00. */
  local: string;
}

export type SwitchState =
  | { state: "off" }
  | { state: "paused" }
  | { state: "ok"; expectWithinMs: number }
  | { state: "tripped"; expectWithinMs: number; scheduledForMs: number; status: string | null };

export interface ScheduleInsight {
  id: string;
  timeZone: string;
  paused: boolean;
  /** The next instants the expression fires after now (also while paused: what resuming would run). */
  next: FireInstant[];
  deadMansSwitch: SwitchState;
}

export class ScheduleInsightService {
  constructor(
    private readonly schedules: ScheduleService,
    private readonly clock: Clock,
  ) {}

  async get(principal: Principal, id: string, query: string): Promise<ScheduleInsight> {
    const { count } = parseQuery(UpcomingQuery, query);
    const { schedule, history } = await this.schedules.get(principal, id, String(HISTORY));
    const nowMs = this.clock.nowMs();
    const cron = CronSchedule.parse(schedule.expression, schedule.timeZone);
    const next: FireInstant[] = [];
    let afterMs = nowMs;
    while (next.length < count) {
      const atMs = cron.nextAfter(afterMs);
      if (atMs === null) break;
      next.push({ atMs, local: localIso(schedule.timeZone, atMs) });
      afterMs = atMs;
    }
    let state: SwitchState;
    if (schedule.expectWithinMs === null) state = { state: "off" };
    else if (schedule.paused) state = { state: "paused" };
    else {
      const tripped = deadMansSwitch(
        {
          id: schedule.id,
          name: schedule.name,
          cron,
          jitterMs: schedule.jitterMs,
          expectWithinMs: schedule.expectWithinMs,
          paused: schedule.paused,
          sinceMs: Math.max(schedule.createdAtMs, schedule.updatedAtMs),
        },
        history,
        nowMs,
      );
      state =
        tripped === null
          ? { state: "ok", expectWithinMs: schedule.expectWithinMs }
          : {
              state: "tripped",
              expectWithinMs: schedule.expectWithinMs,
              scheduledForMs: tripped.scheduledForMs,
              status: tripped.status,
            };
    }
    return {
      id: schedule.id,
      timeZone: schedule.timeZone,
      paused: schedule.paused,
      next,
      deadMansSwitch: state,
    };
  }
}

/** `instantMs` as local ISO time in `zone` with its UTC offset. */
export function localIso(zone: string, instantMs: number): string {
  const offsetMs = offsetMsAt(zone, instantMs);
  const wall = new Date(instantMs + offsetMs).toISOString().slice(0, 19);
  const sign = offsetMs < 0 ? "-" : "+";
  const minutes = Math.abs(Math.round(offsetMs / 60_000));
  const hh = String(Math.floor(minutes / 60)).padStart(2, "0");
  const mm = String(minutes % 60).padStart(2, "0");
  return `${wall}${sign}${hh}:${mm}`;
}
