import type { Clock } from "../../src/ports/clock.js";

/** A clock that moves only when the test says so. */
export class FakeClock implements Clock {
  constructor(private currentMs = 1_700_000_000_000) {}
  nowMs(): number {
    return this.currentMs;
  }
  monotonicMs(): number {
    return this.currentMs;
  }
  advance(deltaMs: number): void {
    this.currentMs += deltaMs;
  }
  set(epochMs: number): void {
    this.currentMs = epochMs;
  }
}
