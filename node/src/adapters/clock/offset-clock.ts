import type { Clock } from "../../ports/clock.js";

/**
 * A clock whose wall time is `offsetMs` away from `base` (CF_CLOCK_OFFSET_MS):
 * how the chaos harness gives one node a skewed clock without touching the
 * machine's. The monotonic clock is left alone: a skewed NTP clock moves wall
 * time, not elapsed time, so leases trusted on monotonic time stay as they are.
 */
export function offsetClock(base: Clock, offsetMs: number): Clock {
  if (offsetMs === 0) return base;
  return {
    nowMs: () => base.nowMs() + offsetMs,
    monotonicMs: () => base.monotonicMs(),
  };
}
