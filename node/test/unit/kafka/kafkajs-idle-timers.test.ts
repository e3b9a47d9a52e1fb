/**
 * The kafkajs request queue, patched (adapters/kafka/kafkajs-idle-timers.ts):
 * idle, it schedules nothing; with requests pending it checks every 10 ms;
 * throttled, it checks once the throttle ends. Unpatched, the idle queue
 * re-armed a 1 ms timer for ever.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { KafkajsRequestQueue } from "../../../src/adapters/kafka/kafkajs-idle-timers.js";

const logger = { debug() {}, info() {}, warn() {}, error() {}, namespace: () => logger };
const queue = () =>
  new KafkajsRequestQueue({
    maxInFlightRequests: 1,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: "test",
    broker: "127.0.0.1:9092",
    logger,
  });

afterEach(() => {
  vi.useRealTimers();
});

describe("kafkajs request queue timers", () => {
  it("schedules nothing while nothing is pending or throttled", () => {
    vi.useFakeTimers();
    const q = queue();
    const check = vi.spyOn(q, "checkPendingRequests");
    q.checkPendingRequests();
    expect(q.throttleCheckTimeoutId).toBeNull();
    vi.advanceTimersByTime(1000);
    expect(check).toHaveBeenCalledTimes(1); // only the call above
  });

  it("checks every 10 ms while requests wait", () => {
    vi.useFakeTimers();
    const q = queue();
    q.pending.push({});
    const check = vi.spyOn(q, "checkPendingRequests").mockImplementation(function (this: typeof q) {
      this.scheduleCheckPendingRequests();
    });
    q.scheduleCheckPendingRequests();
    vi.advanceTimersByTime(35);
    expect(check).toHaveBeenCalledTimes(3);
    q.pending.length = 0;
    vi.advanceTimersByTime(100);
    expect(check).toHaveBeenCalledTimes(4); // the check that found the queue empty stops
  });

  it("checks once the throttle ends, even with nothing pending", () => {
    vi.useFakeTimers();
    const q = queue();
    q.throttledUntil = Date.now() + 50;
    const check = vi.spyOn(q, "checkPendingRequests");
    q.scheduleCheckPendingRequests();
    vi.advanceTimersByTime(49);
    expect(check).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(check).toHaveBeenCalledTimes(1);
  });
});
