/** CF_CLOCK_OFFSET_MS: the skewed clock the chaos harness gives one node (wall time only). */
import { describe, expect, it } from "vitest";
import { offsetClock } from "../../../src/adapters/clock/offset-clock.js";
import { resolveConfig } from "../../../src/config/config.js";
import type { Clock } from "../../../src/ports/clock.js";

const fixed: Clock = { nowMs: () => 1_000_000, monotonicMs: () => 42.5 };

describe("offsetClock", () => {
  it("moves wall time by the offset and leaves monotonic time alone", () => {
    const behind = offsetClock(fixed, -3000);
    expect(behind.nowMs()).toBe(997_000);
    expect(behind.monotonicMs()).toBe(42.5);
    expect(offsetClock(fixed, 2500).nowMs()).toBe(1_002_500);
  });

  it("is the base clock itself at offset 0", () => {
    expect(offsetClock(fixed, 0)).toBe(fixed);
  });

  it("is read from CF_CLOCK_OFFSET_MS, 0 by default, at most a day either way", () => {
    expect(resolveConfig({}).clockOffsetMs).toBe(0);
    expect(resolveConfig({ CF_CLOCK_OFFSET_MS: "-4000" }).clockOffsetMs).toBe(-4000);
    expect(() => resolveConfig({ CF_CLOCK_OFFSET_MS: "86400001" })).toThrow(/CF_CLOCK_OFFSET_MS/);
    expect(() => resolveConfig({ CF_CLOCK_OFFSET_MS: "1.5" })).toThrow(/CF_CLOCK_OFFSET_MS/);
  });
});
