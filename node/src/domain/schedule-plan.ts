/**
 * What the planner decides for one schedule in one pass — pure, from the
 * schedule, the instant `now` and what it knows of the previous occurrence.
 *
 * Window. Occurrences after the cursor (`plannedThroughMs`) up to
 * `now + planAheadMs` are materialised as tasks ahead of time. A schedule
 * whose overlap policy is not `allow` must look at its previous run first,
 * so it is planned only `overlapLeadMs` ahead: the decision is taken that
 * long before the occurrence is due.
 *
 * Misfires. An occurrence more than `misfireGraceMs` in the past when it is
 * planned was missed (the planner was down, or the schedule was created
 * with an old cursor). Per schedule:
 *   skip       — missed occurrences do not run;
 *   fire_once  — one catch-up run now, keyed by the latest missed occurrence;
 *   fire_all   — the latest `fireAllCap` missed occurrences run now (older
 *                ones are dropped), keyed each by its own occurrence. With an
 *                overlap policy other than `allow` they could only overlap
 *                each other, so fire_all acts as fire_once there.
 * Occurrences within the grace are planned as usual (they run at once).
 *
 * Overlap. The previous occurrence is in progress while its task is ARMED or
 * RUNNING, or SCHEDULED/FAILED after a first attempt (a retry pending):
 *   allow      — plan regardless;
 *   skip       — record the occurrence as skipped_overlap, create no task;
 *   buffer_one — create the task WAITING; the planner releases it once the
 *                previous one finishes. A second occurrence while one is
 *                buffered is skipped.
 *
 * Jitter. A task's run_at is its occurrence plus a deterministic spread in
 * [0, jitterMs] hashed from (schedule id, occurrence): a herd at 00:00:00
 * spreads out, and any planner (or a replay) computes the same run_at. Never
 * negative: no occurrence runs before its time.
 */
import type { CronSchedule } from "./cron.js";
import type { MisfirePolicy, OverlapPolicy } from "./schedule.js";
import { fnv1a32 } from "./shard.js";
import type { TaskStatus } from "./task.js";

/** A previous occurrence is in progress while started, or while a retry of it is pending. */
export function isInProgress(status: TaskStatus, attempt: number): boolean {
  if (status === "ARMED" || status === "RUNNING") return true;
  return (status === "SCHEDULED" || status === "FAILED") && attempt >= 1;
}

export type OccurrenceOutcome = "planned" | "buffered" | "skipped_overlap";

export interface PlannedOccurrence {
  /** The nominal occurrence: with the schedule id, the unique key. */
  scheduledForMs: number;
  outcome: OccurrenceOutcome;
  /** When its task runs (null when no task is created). */
  runAtMs: number | null;
  catchUp: boolean;
}

export interface PlanOptions {
  planAheadMs: number;
  overlapLeadMs: number;
  misfireGraceMs: number;
  fireAllCap: number;
  /** Most occurrences one schedule may plan in one pass (the rest wait for the next). */
  maxPerPass: number;
}

export interface PlanInput {
  scheduleId: string;
  cron: CronSchedule;
  misfirePolicy: MisfirePolicy;
  overlapPolicy: OverlapPolicy;
  jitterMs: number;
  plannedThroughMs: number;
  /** Whether the latest occurrence that has a task is still in progress. */
  previousInProgress: boolean;
  /** Whether an occurrence is buffered (WAITING) already. */
  buffered: boolean;
}

export interface Plan {
  occurrences: PlannedOccurrence[];
  plannedThroughMs: number;
  nextOccurrenceMs: number | null;
  /** True when occurrences were missed (whether or not the policy runs some of them). */
  misfired: boolean;
}

export function planSchedule(input: PlanInput, nowMs: number, options: PlanOptions): Plan {
  const untilMs =
    nowMs + (input.overlapPolicy === "allow" ? options.planAheadMs : options.overlapLeadMs);
  const missedBeforeMs = nowMs - options.misfireGraceMs;
  let cursorMs = input.plannedThroughMs;
  const occurrences: PlannedOccurrence[] = [];
  let misfired = false;

  const firstMs = input.cron.nextAfter(cursorMs);
  if (firstMs !== null && firstMs < missedBeforeMs) {
    const keep = catchUpCount(input, options);
    misfired = true;
    for (const scheduledForMs of latestOccurrences(input.cron, cursorMs, missedBeforeMs, keep)) {
      occurrences.push({ scheduledForMs, outcome: "planned", runAtMs: nowMs, catchUp: true });
    }
    cursorMs = missedBeforeMs - 1;
  }
  // Walk the window; the first occurrence beyond it is the schedule's next one.
  let remaining = Math.max(0, options.maxPerPass - occurrences.length);
  let plannedThroughMs = cursorMs;
  let nextMs = cursorMs === input.plannedThroughMs ? firstMs : input.cron.nextAfter(cursorMs);
  while (nextMs !== null && nextMs <= untilMs && remaining > 0) {
    occurrences.push({
      scheduledForMs: nextMs,
      outcome: "planned",
      runAtMs: nextMs,
      catchUp: false,
    });
    plannedThroughMs = nextMs;
    remaining--;
    nextMs = input.cron.nextAfter(nextMs);
  }
  // Stopped by the window, not by maxPerPass: everything up to its end is decided.
  if (nextMs === null || nextMs > untilMs) plannedThroughMs = untilMs;
  applyOverlap(occurrences, input);
  for (const o of occurrences) {
    if (o.runAtMs !== null)
      o.runAtMs += jitterOf(input.scheduleId, o.scheduledForMs, input.jitterMs);
  }
  return { occurrences, plannedThroughMs, nextOccurrenceMs: nextMs, misfired };
}

function catchUpCount(input: PlanInput, options: PlanOptions): number {
  if (input.misfirePolicy === "skip") return 0;
  if (input.misfirePolicy === "fire_once" || input.overlapPolicy !== "allow") return 1;
  return Math.min(options.fireAllCap, options.maxPerPass);
}

/**
 * The latest `n` occurrences in (afterMs, beforeMs), ascending. Searches
 * backwards from `beforeMs` in doubling windows, so a long outage costs
 * about as much as the occurrences kept, not as all those missed.
 */
export function latestOccurrences(
  cron: CronSchedule,
  afterMs: number,
  beforeMs: number,
  n: number,
): number[] {
  if (n === 0) return [];
  let windowMs = 1000;
  for (;;) {
    const startMs = Math.max(afterMs, beforeMs - windowMs);
    const found = cron.between(startMs, beforeMs - 1, Number.MAX_SAFE_INTEGER);
    if (found.length >= n || startMs === afterMs) return found.slice(-n);
    windowMs *= 2;
  }
}

function applyOverlap(occurrences: PlannedOccurrence[], input: PlanInput): void {
  if (input.overlapPolicy === "allow") return;
  let running = input.previousInProgress;
  let buffered = input.buffered;
  for (const o of occurrences) {
    if (!running && !buffered) continue; // it runs; the next one sees it not yet started
    if (input.overlapPolicy === "buffer_one" && !buffered) {
      o.outcome = "buffered";
      buffered = true;
    } else {
      o.outcome = "skipped_overlap";
      o.runAtMs = null;
    }
    running = running || buffered;
  }
}

/** Deterministic spread in [0, jitterMs] for one occurrence of one schedule. */
export function jitterOf(scheduleId: string, scheduledForMs: number, jitterMs: number): number {
  if (jitterMs <= 0) return 0;
  return mix32(fnv1a32(`${scheduleId}@${scheduledForMs}`)) % (jitterMs + 1);
}

/** murmur3's finaliser: FNV alone leaves the low bits of similar keys correlated. */
function mix32(h: number): number {
  let x = h;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b) >>> 0;
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35) >>> 0;
  x ^= x >>> 16;
  return x >>> 0;
}
