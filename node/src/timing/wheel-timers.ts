import type { Clock } from "../ports/clock.js";
import type { PreciseTimers } from "../ports/precise-timers.js";
import { Timers } from "./timers.js";
import { workerThreadDriver } from "./worker-thread-driver.js";

/**
 * PreciseTimers on a Wasm timing wheel of its own (node/src/timing): a
 * sleeper thread wakes the event loop at each due instant, with a one-tick
 * lookahead for sub-millisecond precision. Wall-clock instants are converted
 * with the injected clock.
 */
export function wheelTimers(clock: Clock): PreciseTimers {
  // The sleeper-thread driver, not Timers' default: a dispatcher runs its Timers on a busy event
  // loop, where the main-thread driver's setImmediate turns would compete with I/O.
  const timers = new Timers({ wallNowMs: () => clock.nowMs(), driver: workerThreadDriver });
  return {
    at: (epochMs, callback) => timers.at(epochMs, callback),
    get size() {
      return timers.size;
    },
    close: () => timers.close(),
  };
}
