/** The only way Chronofence reads time. Production wires the system clock; tests drive a fake. */
export interface Clock {
  /** Wall-clock epoch milliseconds (may jump; used for run_at comparisons). */
  nowMs(): number;
  /** Monotonic milliseconds with sub-ms precision (never jumps; used for durations). */
  monotonicMs(): number;
}
