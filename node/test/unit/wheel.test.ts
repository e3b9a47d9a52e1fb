import { describe, expect, it } from "vitest";
import { TsTimingWheel } from "../../../bench/ts-wheel.js";
import { TimingWheel } from "../../src/timing/wasm-wheel.js";

const HORIZON_MS = 2 ** 36;
const IO_CAPACITY = 4096;

describe.each([
  ["Wasm TimingWheel", (nowMs: number) => new TimingWheel({ nowMs })],
  ["TsTimingWheel", (nowMs: number) => new TsTimingWheel({ nowMs })],
])("%s regressions", (_name, makeWheel) => {
  it("fires a level-0 timer on time when an overflow pull lands on its tick", () => {
    const wheel = makeWheel(0);
    const far = wheel.schedule(HORIZON_MS);
    const near = wheel.schedule(1);
    expect(wheel.advance(11)).toEqual([near]);
    expect(wheel.advance(HORIZON_MS)).toEqual([far]);
  });

  it("fires a level-5 timer on time, before a later overflow timer, when a pull lands on its slot", () => {
    const wheel = makeWheel(0);
    const far = wheel.schedule(2 ** 30 - 1 + HORIZON_MS);
    const near = wheel.schedule(2 ** 30);
    expect(wheel.advance(2 ** 30 + 10)).toEqual([near]);
    expect(wheel.advance(HORIZON_MS + 2 ** 30 + 10)).toEqual([far]);
  });
});

describe("Wasm TimingWheel", () => {
  it("refuses handles that are not whole, live handles", () => {
    const wheel = new TimingWheel({ nowMs: 0 });
    const handle = wheel.schedule(100);
    for (const bogus of [handle + 0.5, -1, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, 0, 1]) {
      expect(wheel.cancel(bogus)).toBe(false);
    }
    expect(wheel.cancel(handle)).toBe(true);
    const reused = wheel.schedule(100);
    expect(wheel.cancel(handle)).toBe(false);
    expect(wheel.cancel(reused)).toBe(true);
  });

  it.each([IO_CAPACITY - 1, IO_CAPACITY, IO_CAPACITY + 1, 2 * IO_CAPACITY])(
    "hands out %i timers due in one tick exactly once, across output-buffer refills",
    (count) => {
      const wheel = new TimingWheel({ nowMs: 0 });
      const handles = wheel.scheduleMany(Array.from({ length: count }, () => 50));
      const seen: number[] = [];
      expect(wheel.forEachExpired(50, (h) => seen.push(h))).toBe(count);
      expect(new Set(seen)).toEqual(new Set(handles));
      expect(seen).toHaveLength(count);
      expect(wheel.size).toBe(0);
    },
  );

  it("cancelMany cancels live handles and counts only those", () => {
    const wheel = new TimingWheel({ nowMs: 0 });
    const handles = wheel.scheduleMany(Array.from({ length: 10_000 }, (_, i) => 10 + i));
    expect(wheel.cancelMany(handles.subarray(0, 6_000))).toBe(6_000);
    expect(wheel.cancelMany(handles.subarray(0, 7_000))).toBe(1_000);
    expect(wheel.size).toBe(3_000);
    expect(wheel.advance(20_000)).toEqual(Array.from(handles.subarray(7_000)));
  });

  it("scheduleMany validates every due time before scheduling any", () => {
    const wheel = new TimingWheel({ nowMs: 0 });
    expect(() => wheel.scheduleMany([1, 2, Number.NaN])).toThrow(RangeError);
    expect(wheel.size).toBe(0);
  });

  it.each([100_000, 524_288, 1_000_000, 1_100_000])(
    "holds %i live timers in at most 24 bytes each of linear memory, plus fixed buffers",
    (count) => {
      const wheel = new TimingWheel({ nowMs: 0 });
      const emptyBytes = wheel.memoryBytes;
      wheel.scheduleMany(Array.from({ length: count }, (_, i) => 1 + (i % 100_000)));
      expect((wheel.memoryBytes - emptyBytes) / count).toBeLessThanOrEqual(24.1);
    },
  );
});
