import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LeaseKeeper } from "../../../src/app/execution/lease-keeper.js";
import type { HeartbeatOutcome } from "../../../src/ports/execution-store.js";
import { FakeClock } from "../../support/fake-clock.js";

const ref = { tenantId: "t", taskId: "x", fencingToken: "1" };
const options = { workerId: "w", leaseMs: 3000, heartbeatMs: 100, leaseMarginMs: 1000 };

let clock: FakeClock;
let beats: number;
let answer: () => Promise<HeartbeatOutcome>;
let lost: string[];

beforeEach(() => {
  vi.useFakeTimers();
  clock = new FakeClock();
  beats = 0;
  answer = async () => ({ kind: "extended", leaseExpiresAtMs: 0 });
  lost = [];
});
afterEach(() => vi.useRealTimers());

const keep = () =>
  new LeaseKeeper(
    {
      executions: {
        heartbeat: () => {
          beats++;
          return answer();
        },
      },
      clock,
      onError: () => undefined,
    },
    options,
    ref,
    clock.monotonicMs() + options.leaseMs - options.leaseMarginMs,
    { abort: (by) => lost.push(by) },
  );

describe("LeaseKeeper", () => {
  it("renews every heartbeatMs while the heartbeats land, and stops at end()", async () => {
    const lease = keep();
    await vi.advanceTimersByTimeAsync(550);
    expect(beats).toBe(5);
    lease.end();
    await vi.advanceTimersByTimeAsync(5000);
    expect(beats).toBe(5);
    expect(lost).toEqual([]);
  });

  it("reports the deadline once a heartbeat hangs past it, and sends no more", async () => {
    answer = () => new Promise(() => undefined);
    keep();
    await vi.advanceTimersByTimeAsync(100);
    expect(beats).toBe(1);
    clock.advance(100);
    await vi.advanceTimersByTimeAsync(1999);
    expect(lost).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(lost).toEqual(["deadline"]);
    await vi.advanceTimersByTimeAsync(5000);
    expect(beats).toBe(1);
  });

  it("ends the attempt instead of renewing when it wakes past its deadline (a frozen process)", async () => {
    keep();
    clock.advance(10_000);
    await vi.advanceTimersByTimeAsync(100);
    expect(beats).toBe(0);
    expect(lost).toEqual(["deadline"]);
  });

  it("reports a stale heartbeat once", async () => {
    answer = async () => ({ kind: "stale" });
    keep();
    await vi.advanceTimersByTimeAsync(1000);
    expect(beats).toBe(1);
    expect(lost).toEqual(["stale"]);
  });
});
