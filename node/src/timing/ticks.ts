/**
 * The one place where milliseconds become wheel ticks (whole milliseconds).
 * Due times round up and "now" rounds down, so a timer can be late by less
 * than a millisecond of rounding, but never early.
 */

/** The largest tick that crosses the JS/Wasm boundary exactly as an f64. */
export const MAX_TICK = Number.MAX_SAFE_INTEGER;

export function dueTick(dueMs: number): number {
  if (!Number.isFinite(dueMs))
    throw new RangeError(`due time must be a finite number of ms, got ${dueMs}`);
  return Math.min(MAX_TICK, Math.max(0, Math.ceil(dueMs)));
}

export function nowTick(nowMs: number): number {
  if (!Number.isFinite(nowMs))
    throw new RangeError(`now must be a finite number of ms, got ${nowMs}`);
  return Math.min(MAX_TICK, Math.max(0, Math.floor(nowMs)));
}
