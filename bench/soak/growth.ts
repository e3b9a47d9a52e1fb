/**
 * The soak's leak test (pure: node/test/unit/soak/growth.test.ts): does a
 * sampled series still grow once the system has warmed up?
 *
 * Only the second half of the samples is judged (the first is warm-up:
 * caches, JIT, pools and tables filling). Its slope is the Theil–Sen
 * estimator — the median of the slopes between every pair of samples — so a
 * few outliers (a GC, an autovacuum, a compaction) neither hide nor fake a
 * trend. The slope, projected over an hour, is compared with the series'
 * allowance: `relativePerHour` of the second half's median level, but never
 * less than `absolutePerHour` (a series that sits near zero — a lag, a queue
 * depth — would otherwise fail on noise).
 *
 * A series with fewer than `MIN_JUDGED_SAMPLES` samples in its second half
 * is "too_short": neither a pass nor a failure, and said so.
 */

export interface Sample {
  /** Epoch ms. */
  atMs: number;
  value: number;
}

export interface GrowthRule {
  /** Allowed growth per hour as a fraction of the second half's median level (0.1 = 10 %/h). */
  relativePerHour: number;
  /** Allowed growth per hour in the series' own unit, whatever its level. */
  absolutePerHour: number;
}

export type GrowthVerdict = "flat" | "grows" | "too_short";

export interface GrowthResult {
  verdict: GrowthVerdict;
  /** Theil–Sen slope of the second half, in units per hour (null when too short). */
  slopePerHour: number | null;
  /** The growth per hour allowed for this series. */
  allowedPerHour: number | null;
  /** Median level of the second half. */
  median: number | null;
  judgedSamples: number;
}

export const MIN_JUDGED_SAMPLES = 4;
const HOUR_MS = 3_600_000;

export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error("median of no values");
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Median of the pairwise slopes (units per ms); pairs at the same instant are skipped. */
export function theilSenSlope(samples: readonly Sample[]): number {
  const slopes: number[] = [];
  for (let i = 0; i < samples.length; i++)
    for (let j = i + 1; j < samples.length; j++) {
      const dt = samples[j]!.atMs - samples[i]!.atMs;
      if (dt !== 0) slopes.push((samples[j]!.value - samples[i]!.value) / dt);
    }
  if (slopes.length === 0) throw new Error("a slope needs two samples at different instants");
  return median(slopes);
}

export function judgeGrowth(samples: readonly Sample[], rule: GrowthRule): GrowthResult {
  if (!(rule.relativePerHour >= 0) || !(rule.absolutePerHour >= 0))
    throw new Error("growth allowances must be non-negative numbers");
  const finite = samples.filter((s) => Number.isFinite(s.value)).sort((a, b) => a.atMs - b.atMs);
  const judged = finite.slice(Math.floor(finite.length / 2));
  if (judged.length < MIN_JUDGED_SAMPLES)
    return {
      verdict: "too_short",
      slopePerHour: null,
      allowedPerHour: null,
      median: null,
      judgedSamples: judged.length,
    };
  const slopePerHour = theilSenSlope(judged) * HOUR_MS;
  const level = median(judged.map((s) => s.value));
  const allowedPerHour = Math.max(rule.relativePerHour * Math.abs(level), rule.absolutePerHour);
  return {
    verdict: slopePerHour > allowedPerHour ? "grows" : "flat",
    slopePerHour,
    allowedPerHour,
    median: level,
    judgedSamples: judged.length,
  };
}
