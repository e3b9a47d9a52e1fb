import { describe, expect, it } from "vitest";
import { maxOf } from "../../../bench/support.js";

describe("maxOf (the benchmarks' largest-value helper)", () => {
  it("handles the sizes a 30 s run at 5,000/s holds, where Math.max(...values) overflows the stack", () => {
    const values = Array.from({ length: 500_000 }, (_, i) => i);
    expect(() => Math.max(...values)).toThrow(RangeError);
    expect(maxOf(values)).toBe(499_999);
    expect(
      maxOf(
        new Map([
          ["a", 3],
          ["b", 7],
        ]).values(),
      ),
    ).toBe(7);
    expect(maxOf([])).toBe(Number.NEGATIVE_INFINITY);
  });
});
