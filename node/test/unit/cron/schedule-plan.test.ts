/** The planner's pure decisions: window, misfire policies, overlap policies, jitter. */
import { describe, expect, it } from "vitest";
import { CronSchedule } from "../../../src/domain/cron.js";
import {
  jitterOf,
  latestOccurrences,
  type PlanInput,
  type PlanOptions,
  planSchedule,
} from "../../../src/domain/schedule-plan.js";

const MIN = 60_000;
const T0 = Date.parse("2026-06-01T00:00:00Z");
const options: PlanOptions = {
  planAheadMs: 10 * MIN,
  overlapLeadMs: 3000,
  misfireGraceMs: MIN,
  fireAllCap: 5,
  maxPerPass: 1000,
};
const minutely = CronSchedule.parse("* * * * *", "UTC");

function input(overrides: Partial<PlanInput> = {}): PlanInput {
  return {
    scheduleId: "0190a000-0000-7000-8000-000000000001",
    cron: minutely,
    misfirePolicy: "fire_once",
    overlapPolicy: "allow",
    jitterMs: 0,
    plannedThroughMs: T0,
    previousInProgress: false,
    buffered: false,
    ...overrides,
  };
}
const times = (ms: number[]) => ms.map((t) => (t - T0) / MIN);

describe("planning window", () => {
  it("plans every occurrence up to now + planAhead and moves the cursor there", () => {
    const plan = planSchedule(input(), T0, options);
    expect(times(plan.occurrences.map((o) => o.scheduledForMs))).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
    ]);
    expect(plan.occurrences.every((o) => o.outcome === "planned" && !o.catchUp)).toBe(true);
    expect(plan.plannedThroughMs).toBe(T0 + 10 * MIN);
    expect(plan.nextOccurrenceMs).toBe(T0 + 11 * MIN);
    expect(plan.misfired).toBe(false);
  });

  it("a second pass at the same instant plans nothing new (the cursor is the state)", () => {
    const first = planSchedule(input(), T0, options);
    const second = planSchedule(input({ plannedThroughMs: first.plannedThroughMs }), T0, options);
    expect(second.occurrences).toEqual([]);
  });

  it("stops at maxPerPass and resumes from the last planned occurrence", () => {
    const plan = planSchedule(input(), T0, { ...options, maxPerPass: 3 });
    expect(times(plan.occurrences.map((o) => o.scheduledForMs))).toEqual([1, 2, 3]);
    expect(plan.plannedThroughMs).toBe(T0 + 3 * MIN);
  });

  it("a schedule with an overlap policy is planned only overlapLead ahead", () => {
    const plan = planSchedule(input({ overlapPolicy: "skip" }), T0 + MIN - 2000, options);
    expect(times(plan.occurrences.map((o) => o.scheduledForMs))).toEqual([1]);
    expect(plan.plannedThroughMs).toBe(T0 + MIN + 1000);
  });
});

describe("misfire policies after an outage of 30 minutes", () => {
  const now = T0 + 30 * MIN + 30_000; // occurrences 1..29 are missed, 30 is within the grace

  it("skip: none of the missed occurrences runs", () => {
    const plan = planSchedule(input({ misfirePolicy: "skip" }), now, options);
    expect(plan.misfired).toBe(true);
    expect(plan.occurrences.filter((o) => o.catchUp)).toEqual([]);
    expect(times(plan.occurrences.map((o) => o.scheduledForMs))[0]).toBe(30);
  });

  it("fire_once: one catch-up run now, keyed by the latest missed occurrence", () => {
    const plan = planSchedule(input({ misfirePolicy: "fire_once" }), now, options);
    const catchUps = plan.occurrences.filter((o) => o.catchUp);
    expect(catchUps).toEqual([
      { scheduledForMs: T0 + 29 * MIN, outcome: "planned", runAtMs: now, catchUp: true },
    ]);
    expect(times(plan.occurrences.filter((o) => !o.catchUp).map((o) => o.scheduledForMs))).toEqual([
      30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
    ]);
  });

  it("fire_all: the latest fireAllCap missed occurrences run now", () => {
    const plan = planSchedule(input({ misfirePolicy: "fire_all" }), now, options);
    const catchUps = plan.occurrences.filter((o) => o.catchUp);
    expect(times(catchUps.map((o) => o.scheduledForMs))).toEqual([25, 26, 27, 28, 29]);
    expect(catchUps.every((o) => o.runAtMs === now)).toBe(true);
  });

  it("fire_all with an overlap policy acts as fire_once", () => {
    const plan = planSchedule(
      input({ misfirePolicy: "fire_all", overlapPolicy: "buffer_one" }),
      now,
      options,
    );
    expect(times(plan.occurrences.filter((o) => o.catchUp).map((o) => o.scheduledForMs))).toEqual([
      29,
    ]);
  });

  it("a year-long outage of a secondly schedule costs about the occurrences kept", () => {
    const secondly = CronSchedule.parse("* * * * * *", "UTC");
    const later = T0 + 365 * 86_400_000;
    const latest = latestOccurrences(secondly, T0, later, 3);
    expect(latest).toEqual([later - 3000, later - 2000, later - 1000]);
  });
});

describe("overlap policies", () => {
  const due = T0 + MIN - 2000; // occurrence 1 is inside the lead

  it("skip: previous still running → skipped_overlap, no task", () => {
    const plan = planSchedule(
      input({ overlapPolicy: "skip", previousInProgress: true }),
      due,
      options,
    );
    expect(plan.occurrences).toEqual([
      { scheduledForMs: T0 + MIN, outcome: "skipped_overlap", runAtMs: null, catchUp: false },
    ]);
  });

  it("skip: previous finished → planned", () => {
    const plan = planSchedule(input({ overlapPolicy: "skip" }), due, options);
    expect(plan.occurrences.map((o) => o.outcome)).toEqual(["planned"]);
  });

  it("buffer_one: previous running → buffered; with one buffered already → skipped", () => {
    const buffered = planSchedule(
      input({ overlapPolicy: "buffer_one", previousInProgress: true }),
      due,
      options,
    );
    expect(buffered.occurrences.map((o) => o.outcome)).toEqual(["buffered"]);
    expect(buffered.occurrences[0]!.runAtMs).toBe(T0 + MIN);
    const again = planSchedule(
      input({ overlapPolicy: "buffer_one", previousInProgress: true, buffered: true }),
      due,
      options,
    );
    expect(again.occurrences.map((o) => o.outcome)).toEqual(["skipped_overlap"]);
  });

  it("allow ignores the previous run", () => {
    const plan = planSchedule(input({ previousInProgress: true }), T0, options);
    expect(plan.occurrences.every((o) => o.outcome === "planned")).toBe(true);
  });
});

describe("jitter", () => {
  it("is deterministic per (schedule, occurrence), within [0, jitter_ms], never negative", () => {
    const a = jitterOf("s1", T0, 10_000);
    expect(jitterOf("s1", T0, 10_000)).toBe(a);
    expect(jitterOf("s1", T0, 0)).toBe(0);
    for (let i = 0; i < 1000; i++) {
      const j = jitterOf(`s${i}`, T0, 10_000);
      expect(j).toBeGreaterThanOrEqual(0);
      expect(j).toBeLessThanOrEqual(10_000);
    }
  });

  it("spreads a herd of 10,000 schedules at the same second evenly over the window", () => {
    const buckets = new Array(10).fill(0);
    for (let i = 0; i < 10_000; i++) {
      const id = `0190a000-0000-7000-8000-${i.toString(16).padStart(12, "0")}`;
      buckets[Math.min(9, Math.floor(jitterOf(id, T0, 10_000) / 1000))]++;
    }
    for (const count of buckets) expect(count).toBeGreaterThan(850);
    for (const count of buckets) expect(count).toBeLessThan(1150);
  });

  it("a replan gives the same run_at", () => {
    const once = planSchedule(input({ jitterMs: 5000 }), T0, options);
    const again = planSchedule(input({ jitterMs: 5000 }), T0 + 1000, options);
    expect(again.occurrences.map((o) => o.runAtMs)).toEqual(once.occurrences.map((o) => o.runAtMs));
    for (const o of once.occurrences) {
      expect(o.runAtMs! - o.scheduledForMs).toBeGreaterThanOrEqual(0);
      expect(o.runAtMs! - o.scheduledForMs).toBeLessThanOrEqual(5000);
    }
  });
});
