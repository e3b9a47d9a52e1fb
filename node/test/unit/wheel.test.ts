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

  it("cancels, in the middle of a hand-out, both a timer still to come and one made ready meanwhile", () => {
    const wheel = new TimingWheel({ nowMs: 0 });
    const handles = Array.from(
      wheel.scheduleMany(Array.from({ length: 2 * IO_CAPACITY + 10 }, () => 50)),
    );
    const pending = handles[handles.length - 1]!;
    const seen: number[] = [];
    let madeReady: number[] = [];
    wheel.forEachExpired(50, (handle) => {
      if (seen.length === 0) {
        // Already due: these join the ready list, which is still the slot's chain of blocks.
        madeReady = [wheel.schedule(10), wheel.schedule(20)];
        expect(wheel.cancel(madeReady[0]!)).toBe(true);
        expect(wheel.cancel(pending)).toBe(true);
      }
      seen.push(handle);
    });
    expect(seen).toEqual([...handles.slice(0, -1), madeReady[1]]);
    expect(wheel.cancel(madeReady[0]!)).toBe(false);
    expect(wheel.size).toBe(0);
    expect(wheel.nextExpiry()).toBeNull();
  });

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
    "holds %i live timers in at most 18.2 bytes each of linear memory (16 and growth by an eighth), plus fixed buffers",
    (count) => {
      const wheel = new TimingWheel({ nowMs: 0 });
      const emptyBytes = wheel.memoryBytes;
      wheel.scheduleMany(Array.from({ length: count }, (_, i) => 1 + (i % 100_000)));
      expect((wheel.memoryBytes - emptyBytes) / count).toBeLessThanOrEqual(18.2);
    },
  );

  // A slot's entries sit in blocks of 63; these counts end a block, start one, and span several.
  it.each([1, 62, 63, 64, 127, 200])(
    "swap-removes in a %i-timer slot (its last entry, then one the last entry moves into) and fires exactly the rest",
    (count) => {
      const wheel = new TimingWheel({ nowMs: 0 });
      const handles = Array.from(wheel.scheduleMany(Array.from({ length: count }, () => 5_000)));
      const cancelled = new Set([handles[count - 1]!]);
      expect(wheel.cancel(handles[count - 1]!)).toBe(true); // the list's last entry: nothing moves
      if (count > 3) {
        expect(wheel.cancel(handles[1]!)).toBe(true); // handles[count - 2]'s entry moves into its place
        expect(wheel.cancel(handles[count - 2]!)).toBe(true); // and is found there
        cancelled.add(handles[1]!).add(handles[count - 2]!);
      }
      const kept = handles.filter((h) => !cancelled.has(h));
      expect(wheel.size).toBe(kept.length);
      if (kept.length === 0) expect(wheel.nextExpiry()).toBeNull(); // the emptied slot is no longer occupied
      const fired = wheel.advance(5_000);
      expect(fired).toHaveLength(kept.length);
      expect(new Set(fired)).toEqual(new Set(kept));
      const again = Array.from(wheel.scheduleMany(Array.from({ length: count }, () => 6_000)));
      expect(new Set(wheel.advance(6_000))).toEqual(new Set(again)); // freed blocks are reused cleanly
      expect(wheel.size).toBe(0);
    },
  );

  it.each([
    ["due in one tick", 0, 50, 50],
    ["already due when scheduled", 100, 20, 100],
  ])(
    "cancels a timer of a slot while that slot is being handed out (%s)",
    (_case, startMs, dueMs, nowMs) => {
      const wheel = new TimingWheel({ nowMs: startMs });
      const count = IO_CAPACITY + 500;
      const handles = Array.from(wheel.scheduleMany(Array.from({ length: count }, () => dueMs)));
      const seen: number[] = [];
      const cancelled: number[] = [];
      wheel.forEachExpired(nowMs, (handle) => {
        if (seen.length === 0) {
          // Still in the wheel: the rest of the slot beyond the first output buffer.
          const waiting = handles.filter((h) => h !== handle).slice(-3);
          for (const h of waiting) expect(wheel.cancel(h)).toBe(true);
          cancelled.push(...waiting);
          expect(wheel.cancel(handle)).toBe(false); // handed out already
        }
        seen.push(handle);
      });
      const cancelledSet = new Set(cancelled);
      expect(seen).toHaveLength(count - cancelled.length);
      expect(new Set(seen)).toEqual(new Set(handles.filter((h) => !cancelledSet.has(h))));
      expect(wheel.size).toBe(0);
      expect(wheel.nextExpiry()).toBeNull();
    },
  );

  it("keeps timers already due in schedule order when most of them are cancelled (the ready list compacts)", () => {
    const wheel = new TimingWheel({ nowMs: 1_000 });
    const handles = Array.from(
      wheel.scheduleMany(Array.from({ length: 5_000 }, (_, i) => i % 900)),
    );
    const kept = handles.filter((_, k) => k % 10 === 3);
    for (const [k, handle] of handles.entries()) if (k % 10 !== 3) wheel.cancel(handle);
    expect(wheel.size).toBe(kept.length);
    expect(wheel.nextExpiry()).toBe(1_000);
    expect(wheel.advance(1_000)).toEqual(kept);
    expect(wheel.nextExpiry()).toBeNull();
  });

  it("grows its memory many times over and still fires every timer once, in due order", () => {
    const wheel = new TimingWheel({ nowMs: 0 });
    const startBytes = wheel.memoryBytes;
    const count = 120_000;
    const dueOf = new Map<number, number>();
    for (let i = 0; i < count; i++) {
      const dueMs = 1 + ((i * 7_919) % 150_000);
      dueOf.set(wheel.schedule(dueMs), dueMs);
    }
    expect(wheel.memoryBytes).toBeGreaterThan(3 * startBytes); // about ten growths by an eighth
    let previousDue = 0;
    let early = 0;
    let outOfOrder = 0;
    let fired = 0;
    for (let nowMs = 0; nowMs < 150_000 + 997; nowMs += 997) {
      for (const handle of wheel.advance(nowMs)) {
        const dueMs = dueOf.get(handle)!;
        if (dueMs > nowMs) early++;
        if (dueMs < previousDue) outOfOrder++;
        previousDue = dueMs;
        dueOf.delete(handle);
        fired++;
      }
    }
    expect({ early, outOfOrder, fired, left: dueOf.size }).toEqual({
      early: 0,
      outOfOrder: 0,
      fired: count,
      left: 0,
    });
    expect(wheel.size).toBe(0);
  });
});
