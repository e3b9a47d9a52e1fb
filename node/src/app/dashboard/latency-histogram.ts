/**
 * A latency histogram that sums across nodes: counts in log-scale bins, four
 * per doubling, so any quantile read from it is within 19% of the truth
 * (the bin's upper bound is reported, never less than the sample).
 *
 *   bin 0          ≤ 1 ms
 *   bin b ≥ 1      (2^((b−1)/4), 2^(b/4)] ms      e.g. bin 4 = (1.68, 2] ms, bin 40 = (812, 1024] ms
 *   bin MAX_BIN    everything above ~1.5 days
 *
 * Sparse: only bins with a count are kept, keyed by the bin number as text,
 * which is what a JSON column holds (node_tenant_stats.buckets).
 */
export type Histogram = Record<string, number>;

const BINS_PER_DOUBLING = 4;
export const MAX_BIN = 108;

export function binOfMs(ms: number): number {
  if (!(ms > 1)) return 0; // also NaN and negatives: a clock that ran ahead counts as on time
  return Math.min(MAX_BIN, Math.ceil(BINS_PER_DOUBLING * Math.log2(ms)));
}

/** The largest latency a bin holds. */
export const upperMsOfBin = (bin: number): number => 2 ** (bin / BINS_PER_DOUBLING);

export function observe(histogram: Histogram, ms: number): void {
  const key = String(binOfMs(ms));
  histogram[key] = (histogram[key] ?? 0) + 1;
}

/** Adds `from` into `into` (summing two nodes' bins, or two buckets'). */
export function mergeInto(into: Histogram, from: Readonly<Histogram>): Histogram {
  for (const [bin, count] of Object.entries(from)) {
    if (!Number.isFinite(count) || count <= 0) continue;
    into[bin] = (into[bin] ?? 0) + count;
  }
  return into;
}

export function countOf(histogram: Readonly<Histogram>): number {
  let total = 0;
  for (const count of Object.values(histogram)) total += count;
  return total;
}

/** The q-quantile (0 < q ≤ 1) as the upper bound of its bin, or null for an empty histogram. */
export function quantileMs(histogram: Readonly<Histogram>, q: number): number | null {
  const bins = Object.entries(histogram)
    .map(([bin, count]) => [Number(bin), count] as const)
    .filter(([bin, count]) => Number.isInteger(bin) && count > 0)
    .sort((a, b) => a[0] - b[0]);
  const total = bins.reduce((sum, [, count]) => sum + count, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (const [bin, count] of bins) {
    seen += count;
    if (seen >= rank) return upperMsOfBin(bin);
  }
  return upperMsOfBin(bins[bins.length - 1]![0]);
}
