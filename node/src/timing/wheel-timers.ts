import type { Clock } from "../ports/clock.js";
import type { PreciseTimers } from "../ports/precise-timers.js";
import { loopTimerDriver } from "./main-thread-driver.js";
import { Timers } from "./timers.js";

/**
 * PreciseTimers on a Wasm timing wheel of its own (node/src/timing), woken by
 * the event loop's own timer: a task fires within about a millisecond of its
 * due instant, never before it. Wall-clock instants are converted with the
 * injected clock.
 */
export function wheelTimers(clock: Clock): PreciseTimers {
  // Not Timers' default (main-thread driver): its setImmediate turns before each instant would
  // compete with the dispatcher's I/O. Nor the sleeper thread (worker-thread driver), sub-
  // millisecond but dearer: at 5,000 tasks/s its wakes took about 0.09 cores of a node's
  // 0.57, about 8 % of the CPU per task (bench/RESULTS.md, end to end, session 29).
  const timers = new Timers({ wallNowMs: () => clock.nowMs(), driver: loopTimerDriver });
  return {
    at: (epochMs, callback) => timers.at(epochMs, callback),
    get size() {
      return timers.size;
    },
    close: () => timers.close(),
  };
}
