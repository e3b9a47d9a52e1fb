import { dueTick, nowTick } from "./ticks.js";
import type { TimerWheel } from "./timer-wheel.js";

interface ReferenceTimer {
  dueTick: number;
  sequence: number;
  late: boolean;
}

/**
 * The obviously-correct timer queue: a map and a sort. It is the oracle the
 * property tests hold the wheels to, and a fake for services that need a
 * TimerWheel without Wasm. O(n log n) per advance: not for production.
 */
export class ReferenceWheel implements TimerWheel {
  private readonly timers = new Map<number, ReferenceTimer>();
  private positionTick: number;
  private nextHandle = 1;

  constructor(options: { nowMs?: number } = {}) {
    this.positionTick = nowTick(options.nowMs ?? 0);
  }

  get size(): number {
    return this.timers.size;
  }

  schedule(dueMs: number): number {
    const tick = dueTick(dueMs);
    const handle = this.nextHandle++;
    this.timers.set(handle, { dueTick: tick, sequence: handle, late: tick <= this.positionTick });
    return handle;
  }

  cancel(handle: number): boolean {
    return this.timers.delete(handle);
  }

  advance(nowMs: number): number[] {
    return this.advanceDescribed(nowMs).map((expiry) => expiry.handle);
  }

  /** advance(), also telling for each handle whether it was late and its due tick (for order checks). */
  advanceDescribed(nowMs: number): { handle: number; late: boolean; dueTick: number }[] {
    this.positionTick = Math.max(this.positionTick, nowTick(nowMs));
    const expired = [...this.timers.entries()]
      .filter(([, timer]) => timer.dueTick <= this.positionTick)
      .sort(([, a], [, b]) => compareExpiry(a, b))
      .map(([handle, timer]) => ({ handle, late: timer.late, dueTick: timer.dueTick }));
    for (const { handle } of expired) this.timers.delete(handle);
    return expired;
  }

  nextExpiry(): number | null {
    let earliest: number | null = null;
    for (const timer of this.timers.values()) {
      const at = timer.late ? this.positionTick : timer.dueTick;
      if (earliest === null || at < earliest) earliest = at;
    }
    return earliest;
  }
}

/** Late timers first in schedule order, then by due tick, ties in schedule order. */
function compareExpiry(a: ReferenceTimer, b: ReferenceTimer): number {
  if (a.late !== b.late) return a.late ? -1 : 1;
  if (a.late) return a.sequence - b.sequence;
  return a.dueTick - b.dueTick || a.sequence - b.sequence;
}
