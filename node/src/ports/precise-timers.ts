/** One pending timer of PreciseTimers. */
export interface PreciseTimer {
  /** False when it already fired or was cancelled. */
  cancel(): boolean;
}

/**
 * Timers that fire at a wall-clock instant, never before it, as soon after
 * as the process can wake (the Wasm wheel behind it in production).
 */
export interface PreciseTimers {
  at(epochMs: number, callback: () => void): PreciseTimer;
  readonly size: number;
  close(): void;
}
