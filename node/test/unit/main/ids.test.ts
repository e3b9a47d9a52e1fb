import { describe, expect, it } from "vitest";
import { uuidv7From } from "../../../src/main/ids.js";
import { FakeClock } from "../../support/fake-clock.js";

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("uuidv7From", () => {
  it("gives distinct, increasing UUIDv7s stamped by the clock, past several refills of its random buffer", () => {
    const clock = new FakeClock(Date.parse("2026-12-06T12:00:00Z"));
    const next = uuidv7From(clock);
    const ids: string[] = [];
    for (let i = 0; i < 5000; i++) {
      if (i % 100 === 0) clock.advance(1);
      ids.push(next());
    }
    for (const id of ids) expect(id).toMatch(UUID_V7);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    // The first 48 bits are the clock's milliseconds.
    expect(Number.parseInt(ids[0]!.replace(/-/g, "").slice(0, 12), 16)).toBe(clock.nowMs() - 49);
  });

  it("draws different random bits in each generator", () => {
    const clock = new FakeClock(0);
    const a = uuidv7From(clock)();
    const b = uuidv7From(clock)();
    expect(a).not.toBe(b);
  });
});
