/** bench:e2e --find-max's step verdict and rate ladder (bench/e2e-find-max.ts). */
import { describe, expect, it } from "vitest";
import { nextRate, stepVerdict } from "../../../bench/e2e-find-max.js";

const lateness = (p99_ms: number) => ({ p50_ms: 5, p99_ms, max_ms: p99_ms + 1 });

describe("a find-max step", () => {
  it("passes at 98 % of the offered rate with p99 at most 1 s, and fails just beyond either", () => {
    expect(stepVerdict(1000, { completed_per_s: 980, worker_start: lateness(1000) })).toBeNull();
    expect(stepVerdict(1000, { completed_per_s: 979, worker_start: lateness(10) })).toMatch(
      /plateau 979/,
    );
    expect(stepVerdict(1000, { completed_per_s: 1000, worker_start: lateness(1001) })).toMatch(
      /p99 1001/,
    );
  });

  it("fails without a result or a plateau", () => {
    expect(stepVerdict(1000, null)).toBe("no result");
    expect(stepVerdict(1000, { completed_per_s: null, worker_start: lateness(10) })).toMatch(
      /plateau 0/,
    );
  });

  it("climbs by a quarter, rounded to 100/s, at least 100/s a step", () => {
    const ladder = [500];
    while (ladder.length < 8) ladder.push(nextRate(ladder[ladder.length - 1]!));
    expect(ladder).toEqual([500, 600, 800, 1000, 1300, 1600, 2000, 2500]);
    expect(nextRate(100)).toBe(200);
  });
});
