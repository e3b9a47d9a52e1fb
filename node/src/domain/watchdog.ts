/**
 * The watchdog's judgement, pure: when the canary pipeline counts as broken,
 * and when a schedule's dead man's switch trips. It alerts on the absence of
 * a success, not on errors someone had to report.
 *
 * Canaries. Every interval the watchdog submits a canary task due a few
 * seconds later. The alert fires while some canary has gone `deadlineMs`
 * since its submission without reaching COMPLETED — a submission the API
 * refused counts as a canary that never completes, so an API that is down
 * alerts too. A canary that completes in time settles every older one (a
 * lost canary must not keep the alert up once new ones succeed), which is
 * what clears the alert.
 *
 * Dead man's switch. For a schedule with `expect_within_ms`, take its latest
 * occurrence whose deadline (occurrence + jitter + expect_within) has passed,
 * counting only occurrences since the schedule was last changed; the switch
 * trips unless that occurrence, or a later one, is COMPLETED. Computed from
 * the cron expression, not from what was planned, so a planner that stopped
 * creating occurrences trips it too.
 */
import type { CronSchedule } from "./cron.js";
import { latestOccurrences } from "./schedule-plan.js";
import type { TaskStatus } from "./task.js";

interface Canary {
  /** Null when the submission failed. */
  taskId: string | null;
  submittedAtMs: number;
}

export class CanaryMonitor {
  private outstanding: Canary[] = [];

  constructor(private readonly deadlineMs: number) {}

  submitted(taskId: string | null, nowMs: number): void {
    this.outstanding.push({ taskId, submittedAtMs: nowMs });
  }

  /** Task ids still worth asking about. */
  pending(): string[] {
    return this.outstanding.flatMap((c) => (c.taskId === null ? [] : [c.taskId]));
  }

  /** A canary reached COMPLETED: it and every older canary are settled. */
  completed(taskId: string): void {
    const index = this.outstanding.findIndex((c) => c.taskId === taskId);
    if (index >= 0) this.outstanding = this.outstanding.slice(index + 1);
  }

  /** The oldest canary past its deadline, if any: the alert holds while there is one. */
  overdue(nowMs: number): { taskId: string | null; ageMs: number } | null {
    const oldest = this.outstanding[0];
    if (oldest === undefined || nowMs - oldest.submittedAtMs < this.deadlineMs) return null;
    return { taskId: oldest.taskId, ageMs: nowMs - oldest.submittedAtMs };
  }
}

export interface WatchedSchedule {
  id: string;
  name: string;
  cron: CronSchedule;
  jitterMs: number;
  expectWithinMs: number;
  paused: boolean;
  /** Occurrences before this instant are not expected (created, resumed or changed then). */
  sinceMs: number;
}

export interface ObservedOccurrence {
  scheduledForMs: number;
  status: TaskStatus | null;
}

export interface Tripped {
  scheduledForMs: number;
  /** The occurrence's task status, or null when none was recorded. */
  status: TaskStatus | null;
}

export function deadMansSwitch(
  schedule: WatchedSchedule,
  history: readonly ObservedOccurrence[],
  nowMs: number,
): Tripped | null {
  if (schedule.paused) return null;
  const graceMs = schedule.jitterMs + schedule.expectWithinMs;
  const [expectedMs] = latestOccurrences(schedule.cron, schedule.sinceMs, nowMs - graceMs + 1, 1);
  if (expectedMs === undefined) return null;
  const done = history.some((o) => o.scheduledForMs >= expectedMs && o.status === "COMPLETED");
  if (done) return null;
  const record = history.find((o) => o.scheduledForMs === expectedMs);
  return { scheduledForMs: expectedMs, status: record?.status ?? null };
}
