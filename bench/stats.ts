/**
 * The benches' statistics, in a module of their own: free of the services'
 * clients (support.ts), so that bench:wheel's memory figures do not carry them.
 */

/** The value at percentile p (0–100) of ascending `sorted` (nearest rank); 0 for none. */
export const percentile = (sorted: ArrayLike<number>, p: number): number =>
  sorted.length === 0
    ? 0
    : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

/** The middle value (the upper of the two middle ones for an even count); NaN for none. */
export const median = (xs: readonly number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : sorted[Math.floor(sorted.length / 2)]!;
};
