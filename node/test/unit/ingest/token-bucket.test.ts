import { describe, expect, it } from "vitest";
import { TokenBucket } from "../../../src/domain/token-bucket.js";
import { FakeClock } from "../../support/fake-clock.js";

describe("TokenBucket", () => {
  it("starts full, empties, and refills at its rate", () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(10, 5, clock.nowMs());
    expect(bucket.take(5, clock.nowMs())).toEqual({ ok: true, remaining: 0, retryAfterMs: 0 });
    expect(bucket.take(1, clock.nowMs())).toEqual({ ok: false, remaining: 0, retryAfterMs: 100 });
    clock.advance(100);
    expect(bucket.take(1, clock.nowMs()).ok).toBe(true);
  });

  it("never holds more than its burst", () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(1000, 3, clock.nowMs());
    clock.advance(60_000);
    expect(bucket.take(4, clock.nowMs()).ok).toBe(false);
    expect(bucket.take(3, clock.nowMs()).ok).toBe(true);
  });

  it("takes nothing when it refuses", () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(1, 10, clock.nowMs());
    expect(bucket.take(11, clock.nowMs()).ok).toBe(false);
    expect(bucket.take(10, clock.nowMs()).ok).toBe(true);
  });

  it("says a cost above the burst can never pass", () => {
    const clock = new FakeClock();
    expect(new TokenBucket(1, 2, clock.nowMs()).take(3, clock.nowMs()).retryAfterMs).toBe(Infinity);
  });

  it("neither mints nor burns tokens when the clock steps backwards", () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(10, 10, clock.nowMs());
    bucket.take(10, clock.nowMs());
    clock.advance(-5000);
    expect(bucket.take(1, clock.nowMs()).ok).toBe(false);
    clock.advance(5000 + 100);
    expect(bucket.take(1, clock.nowMs()).ok).toBe(true);
  });
});
