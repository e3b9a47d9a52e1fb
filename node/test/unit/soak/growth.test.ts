/** The soak's leak test on hand-made series: flat, leaking, noisy, warming up, too short. */
import { describe, expect, it } from "vitest";
import {
  judgeGrowth,
  MIN_JUDGED_SAMPLES,
  median,
  type Sample,
  theilSenSlope,
} from "../../../../bench/soak/growth.js";

const MINUTE = 60_000;
const MiB = 1024 * 1024;
/** One sample a minute for `minutes`, value f(minute). */
const series = (minutes: number, f: (m: number) => number): Sample[] =>
  Array.from({ length: minutes }, (_, m) => ({ atMs: 1_000_000 + m * MINUTE, value: f(m) }));
const rule = { relativePerHour: 0.1, absolutePerHour: 4 * MiB };

describe("theilSenSlope and median", () => {
  it("is the exact slope of a line, in units per ms", () => {
    expect(theilSenSlope(series(10, (m) => 5 + 2 * m))).toBeCloseTo(2 / MINUTE, 12);
  });

  it("ignores a minority of outliers that would bend a least-squares fit", () => {
    const values = series(20, () => 100);
    values[17]!.value = 10_000;
    values[18]!.value = 10_000;
    expect(theilSenSlope(values)).toBe(0);
  });

  it("takes the mean of the two middle values of an even count", () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(() => median([])).toThrow(/no values/);
  });
});

describe("judgeGrowth", () => {
  it("passes a flat series with noise", () => {
    const noisy = series(60, (m) => 200 * MiB + ((m * 7919) % 13) * 0.1 * MiB);
    expect(judgeGrowth(noisy, rule).verdict).toBe("flat");
  });

  it("fails a steady leak of 30 MiB per hour on a 200 MiB process (over 10 %/h)", () => {
    const leak = series(60, (m) => 200 * MiB + m * 0.5 * MiB);
    const result = judgeGrowth(leak, rule);
    expect(result.verdict).toBe("grows");
    expect(result.slopePerHour! / MiB).toBeCloseTo(30, 6);
    expect(result.allowedPerHour! / MiB).toBeCloseTo(0.1 * (200 + 22.25), 1);
  });

  it("forgives a warm-up in the first half that levels off", () => {
    const warming = series(60, (m) => (m < 30 ? 50 * MiB + m * 5 * MiB : 200 * MiB));
    expect(judgeGrowth(warming, rule).verdict).toBe("flat");
  });

  it("fails a leak that starts only in the second half", () => {
    const late = series(60, (m) => (m < 30 ? 200 * MiB : 200 * MiB + (m - 30) * MiB));
    expect(judgeGrowth(late, rule).verdict).toBe("grows");
  });

  it("uses the absolute floor for a series near zero (a queue that wobbles)", () => {
    const lag = series(60, (m) => (m % 2) * 3 + m * 0.01);
    const result = judgeGrowth(lag, { relativePerHour: 0.5, absolutePerHour: 1000 });
    expect(result.allowedPerHour).toBe(1000);
    expect(result.verdict).toBe("flat");
    expect(
      judgeGrowth(
        series(60, (m) => m * 100),
        { relativePerHour: 0.5, absolutePerHour: 1000 },
      ).verdict,
    ).toBe("grows");
  });

  it("does not judge a series with too few samples, and skips NaN samples", () => {
    const short = series(2 * MIN_JUDGED_SAMPLES - 2, (m) => m * MiB);
    expect(judgeGrowth(short, rule).verdict).toBe("too_short");
    const gappy = series(2 * MIN_JUDGED_SAMPLES + 4, (m) => (m % 2 === 0 ? Number.NaN : m * MiB));
    expect(judgeGrowth(gappy, rule)).toMatchObject({ verdict: "too_short" });
    const enough = series(2 * MIN_JUDGED_SAMPLES, (m) => m * MiB);
    expect(judgeGrowth(enough, rule).verdict).toBe("grows");
  });

  it("refuses a negative or missing allowance", () => {
    expect(() =>
      judgeGrowth(
        series(10, () => 1),
        { relativePerHour: -1, absolutePerHour: 0 },
      ),
    ).toThrow(/non-negative/);
  });
});
