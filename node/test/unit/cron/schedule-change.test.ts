/** What a PATCH does to a schedule's planning cursor, and which changes re-plan. */
import { describe, expect, it } from "vitest";
import { changeOf } from "../../../src/app/schedules/schedules.js";
import { type Schedule, validateSchedulePatch } from "../../../src/domain/schedule.js";

const MIN = 60_000;
const NOW = Date.parse("2026-06-01T12:00:00Z");

const current: Schedule = {
  id: "0190a000-0000-7000-8000-000000000001",
  tenantId: "0190a000-0000-7000-8000-0000000000aa",
  name: "n",
  expression: "*/5 * * * *",
  timeZone: "UTC",
  type: "t",
  payload: null,
  payloadJson: "null",
  priority: "standard",
  maxAttempts: 3,
  timeoutMs: 30_000,
  backoff: { strategy: "exponential", baseMs: 1000, maxMs: 3_600_000 },
  misfirePolicy: "fire_once",
  overlapPolicy: "allow",
  jitterMs: 0,
  expectWithinMs: null,
  paused: false,
  version: 4,
  plannedThroughMs: NOW + 10 * MIN, // planned 10 minutes ahead
  nextOccurrenceMs: NOW + 15 * MIN,
  createdAtMs: NOW - MIN,
  updatedAtMs: NOW - MIN,
};

const patch = (body: unknown, from: Schedule = current) =>
  changeOf(
    from,
    validateSchedulePatch(body, from, { maxPayloadBytes: 65_536, retryDefaults: {} }),
    NOW,
  );

describe("changeOf", () => {
  it("pausing re-plans from now: future occurrences are cancelled, the cursor comes back", () => {
    const change = patch({ paused: true });
    expect(change.replanAfterMs).toBe(NOW);
    expect(change.next.plannedThroughMs).toBe(NOW);
    expect(change.changed).toEqual(["paused"]);
  });

  it("resuming starts from now: what fell due while paused does not run", () => {
    const paused = { ...current, paused: true, plannedThroughMs: NOW - 60 * MIN };
    const change = patch({ paused: false }, paused);
    expect(change.replanAfterMs).toBeNull();
    expect(change.next.plannedThroughMs).toBe(NOW);
    expect(change.next.nextOccurrenceMs).toBe(NOW + 5 * MIN);
  });

  it("a new expression or zone re-plans; the next occurrence follows the new definition", () => {
    const change = patch({ expression: "0 * * * *", time_zone: "Asia/Kolkata" });
    expect(change.replanAfterMs).toBe(NOW);
    expect(change.next.nextOccurrenceMs).toBe(Date.parse("2026-06-01T12:30:00Z")); // 18:00 IST
  });

  it("a payload change re-plans (the planned tasks carry the old one); a policy change does not", () => {
    expect(patch({ payload: { v: 2 } }).replanAfterMs).toBe(NOW);
    const policy = patch({ misfire_policy: "skip", overlap_policy: "skip", name: "m" });
    expect(policy.replanAfterMs).toBeNull();
    expect(policy.next.plannedThroughMs).toBe(current.plannedThroughMs);
  });

  it("setting a field to its current value changes nothing", () => {
    const same = patch({ expression: "*/5 * * * *" });
    expect(same.changed).toEqual([]);
    expect(same.replanAfterMs).toBeNull();
  });

  it("rejects an empty patch, a bad zone and unknown fields", () => {
    expect(() => patch({})).toThrow(/at least one field/);
    expect(() => patch({ time_zone: "Nowhere/Land" })).toThrow(/unknown time zone/);
    expect(() => patch({ cron: "* * * * *" })).toThrow(/malformed schedule/);
  });
});
