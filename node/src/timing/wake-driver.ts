import { performance } from "node:perf_hooks";

/**
 * Wakes the Timers loop at (or just after) a requested instant. Instants are
 * "precise epoch" milliseconds: performance.timeOrigin + performance.now(),
 * the same in every thread and immune to wall-clock steps.
 */
export interface WakeDriver {
  /** Asks for one wake at `atMs` (replacing any earlier request), or none for null. */
  wakeAt(atMs: number | null): void;
  /** Stops for good; no wake follows. */
  close(): void;
}

export type WakeDriverFactory = (onWake: () => void) => WakeDriver;

/** The clock every driver and Timers itself measure instants with (see above). */
export function preciseNowMs(): number {
  return performance.timeOrigin + performance.now();
}
