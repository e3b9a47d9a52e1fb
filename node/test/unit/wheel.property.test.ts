import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TsTimingWheel } from "../../../bench/ts-wheel.js";
import { ReferenceWheel } from "../../src/timing/reference-wheel.js";
import type { TimerWheel } from "../../src/timing/timer-wheel.js";
import { TimingWheel } from "../../src/timing/wasm-wheel.js";
import { propertyParams } from "../support/property.js";

const HORIZON_MS = 2 ** 36;
const LEVEL_SPANS_MS = [1, 64, 64 ** 2, 64 ** 3, 64 ** 4, 64 ** 5, HORIZON_MS];

/** Offsets that land on every level, on the horizon's edges, beyond it, and in the past. */
const offsetMs = fc.oneof(
  fc.constantFrom(HORIZON_MS + 2 ** 30, 2 * HORIZON_MS - 1, HORIZON_MS + 64),
  fc.integer({ min: -5_000, max: 0 }),
  fc.integer({ min: 0, max: 130 }),
  fc.constantFrom(...LEVEL_SPANS_MS.flatMap((span) => [span - 1, span, span + 1])),
  fc
    .integer({ min: 0, max: 6 })
    .chain((level) => fc.integer({ min: 0, max: 64 * LEVEL_SPANS_MS[level]! })),
  fc.integer({ min: HORIZON_MS - 5_000, max: 4 * HORIZON_MS }),
  fc.double({ min: 0, max: 5_000, noNaN: true }),
);

type Command =
  | { kind: "schedule"; offsetMs: number }
  | { kind: "collide"; pick: number }
  | { kind: "aligned"; level: number; slots: number; nudgeMs: number }
  | { kind: "relative"; pick: number; deltaMs: number }
  | { kind: "scheduleMany"; offsetsMs: number[] }
  | { kind: "cancel"; pick: number }
  | { kind: "advance"; deltaMs: number };

const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 5, arbitrary: offsetMs.map((o) => ({ kind: "schedule" as const, offsetMs: o })) },
  { weight: 2, arbitrary: fc.nat().map((pick) => ({ kind: "collide" as const, pick })) },
  {
    // Exactly on, or next to, a slot boundary of some level (absolute, not relative to now).
    weight: 2,
    arbitrary: fc
      .record({
        level: fc.integer({ min: 0, max: 6 }),
        slots: fc.integer({ min: 0, max: 65 }),
        nudgeMs: fc.constantFrom(-1, 0, 1),
      })
      .map((r) => ({ kind: "aligned" as const, ...r })),
  },
  {
    // Another timer's due time shifted by a horizon or a level span: overflow next to slot edges.
    weight: 2,
    arbitrary: fc
      .record({
        pick: fc.nat(),
        deltaMs: fc.constantFrom(
          ...LEVEL_SPANS_MS.flatMap((span) => [HORIZON_MS + span, HORIZON_MS - span, -span, span]),
        ),
      })
      .map((r) => ({ kind: "relative" as const, ...r })),
  },
  {
    weight: 1,
    arbitrary: fc
      .array(offsetMs, { minLength: 1, maxLength: 700 })
      .map((offsetsMs) => ({ kind: "scheduleMany" as const, offsetsMs })),
  },
  { weight: 3, arbitrary: fc.nat().map((pick) => ({ kind: "cancel" as const, pick })) },
  {
    weight: 4,
    arbitrary: fc
      .oneof(
        fc.integer({ min: -2_000, max: 200 }),
        fc.constantFrom(...LEVEL_SPANS_MS.flatMap((span) => [span - 1, span, span + 1, 3 * span])),
        fc.double({ min: 0, max: 3 * HORIZON_MS, noNaN: true }),
      )
      .map((deltaMs) => ({ kind: "advance" as const, deltaMs })),
  },
);

/** Runs the same commands on a wheel and on the reference; fails at the first difference. */
function checkAgainstReference(
  makeWheel: (nowMs: number) => TimerWheel,
  startMs: number,
  commands: Command[],
) {
  const wheel = makeWheel(startMs);
  const reference = new ReferenceWheel({ nowMs: startMs });
  const wheelHandles: number[] = [];
  const referenceHandles: number[] = [];
  const indexOfWheelHandle = new Map<number, number>();
  const indexOfReferenceHandle = new Map<number, number>();
  let nowMs = startMs;
  const dueTimes: number[] = [];

  const add = (wheelHandle: number, referenceHandle: number, dueMs: number) => {
    indexOfWheelHandle.set(wheelHandle, wheelHandles.length);
    indexOfReferenceHandle.set(referenceHandle, wheelHandles.length);
    wheelHandles.push(wheelHandle);
    referenceHandles.push(referenceHandle);
    dueTimes.push(dueMs);
  };

  for (const c of commands) {
    if (
      c.kind === "schedule" ||
      c.kind === "collide" ||
      c.kind === "aligned" ||
      c.kind === "relative"
    ) {
      const dueMs = dueTimeOf(c, nowMs, dueTimes);
      add(wheel.schedule(dueMs), reference.schedule(dueMs), dueMs);
    } else if (c.kind === "scheduleMany") {
      const dues = c.offsetsMs.map((o) => nowMs + o);
      const handles =
        wheel instanceof TimingWheel
          ? Array.from(wheel.scheduleMany(dues))
          : dues.map((d) => wheel.schedule(d));
      for (const [k, d] of dues.entries()) add(handles[k]!, reference.schedule(d), d);
    } else if (c.kind === "cancel") {
      if (wheelHandles.length === 0) continue;
      const k = c.pick % wheelHandles.length;
      expect(wheel.cancel(wheelHandles[k]!)).toBe(reference.cancel(referenceHandles[k]!));
    } else {
      nowMs += c.deltaMs;
      const expected = reference.advanceDescribed(nowMs);
      const expectedIndexes = expected.map((e) => indexOfReferenceHandle.get(e.handle)!);
      const orderOf = new Map(
        expected.map((e, k) => [
          expectedIndexes[k]!,
          e.late ? `late#${expectedIndexes[k]}` : `due@${e.dueTick}`,
        ]),
      );
      const expectedOrder = expectedIndexes.map((index) => orderOf.get(index)!);
      const actualIndexes = wheel.advance(nowMs).map((h) => indexOfWheelHandle.get(h)!);
      expect(new Set(actualIndexes)).toEqual(new Set(expectedIndexes));
      expect(actualIndexes.length).toBe(expectedIndexes.length);
      // Same set, and the same order up to ties between timers due in the same millisecond.
      expect(actualIndexes.map((index) => orderOf.get(index)!)).toEqual(expectedOrder);
    }
    expect(wheel.size).toBe(reference.size);
    const expectedNext = reference.nextExpiry();
    const actualNext = wheel.nextExpiry();
    // nextExpiry is a lower bound of the earliest due time, and null exactly when empty.
    if (expectedNext === null) {
      expect(actualNext).toBeNull();
    } else {
      expect(actualNext).not.toBeNull();
      expect(actualNext!).toBeLessThanOrEqual(expectedNext);
    }
  }
}

function dueTimeOf(c: Command, nowMs: number, dueTimes: number[]): number {
  const picked = (pick: number) => dueTimes[pick % Math.max(1, dueTimes.length)] ?? nowMs;
  switch (c.kind) {
    case "schedule":
      return nowMs + c.offsetMs;
    case "collide":
      return picked(c.pick);
    case "aligned": {
      const span = LEVEL_SPANS_MS[c.level]!;
      return Math.max(0, (Math.floor(nowMs / span) + c.slots) * span + c.nudgeMs);
    }
    case "relative":
      return Math.max(0, picked(c.pick) + c.deltaMs);
    default:
      throw new Error(`not a scheduling command: ${c.kind}`);
  }
}

const implementations: [string, (nowMs: number) => TimerWheel][] = [
  ["Wasm TimingWheel", (nowMs) => new TimingWheel({ nowMs })],
  ["TsTimingWheel", (nowMs) => new TsTimingWheel({ nowMs })],
];

describe.each(implementations)("%s against the reference model", (_name, makeWheel) => {
  it("agrees at every step of random schedule / cancel / advance sequences", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.constantFrom(0, 2 ** 36, 2 ** 40, 2 ** 52),
          fc.integer({ min: 0, max: 2 ** 41 }),
        ),
        fc.array(command, { minLength: 1, maxLength: 120 }),
        (startMs, commands) => checkAgainstReference(makeWheel, startMs, commands),
      ),
      propertyParams({ numRuns: Number(process.env.WHEEL_RUNS ?? 600) }),
    );
  });

  it("fires every timer once, in the first advance that reaches it, across jumps beyond the horizon", () => {
    const startMs = 1_700_000_000_000;
    const wheel = makeWheel(startMs);
    const dueOf = new Map<number, number>();
    for (let i = 0; i < 20_000; i++) {
      const dueMs = startMs + 1 + ((i * 7919 * 104_729) % 2 ** 38);
      dueOf.set(wheel.schedule(dueMs), dueMs);
    }
    const fired = new Set<number>();
    for (
      let nowMs = startMs, previousMs = startMs;
      fired.size < dueOf.size;
      previousMs = nowMs, nowMs += 2 ** 31 + 17
    ) {
      for (const handle of wheel.advance(nowMs)) {
        expect(fired.has(handle)).toBe(false);
        expect(dueOf.get(handle)!).toBeLessThanOrEqual(nowMs);
        expect(dueOf.get(handle)!).toBeGreaterThan(previousMs);
        fired.add(handle);
      }
    }
    expect(wheel.size).toBe(0);
    expect(wheel.nextExpiry()).toBeNull();
  });
});
