/**
 * A timer queue driven by the caller's clock: nothing happens between calls.
 * Times are epoch (or any monotonic base) milliseconds; implementations round
 * due times up to whole milliseconds so no timer fires early.
 */
export interface TimerWheel {
  /** Schedules a timer; returns its handle. A due time at or before the wheel's position fires on the next advance. */
  schedule(dueMs: number): number;
  /** Cancels a live timer; false for a handle that fired, was cancelled, or never existed. */
  cancel(handle: number): boolean;
  /** Moves to `nowMs` and returns the handles that expired: late ones first, then in due order. */
  advance(nowMs: number): number[];
  /** A lower bound of the next due time (exact within 64 ms), or null when empty. */
  nextExpiry(): number | null;
  /** Live timers. */
  readonly size: number;
}
