import type { Clock } from "../../ports/clock.js";
import type { PreciseTimers } from "../../ports/precise-timers.js";
import { Timers } from "../../timers/timers.js";

/**
 * PreciseTimers on a Wasm timing wheel of its own (node/src/timers): a
 * sleeper thread wakes the event loop at each due instant, with a one-tick
 * lookahead for sub-millisecond precision. Wall-clock instants are converted
 * with the injected clock.
 */
export function wheelTimers(clock: Clock): PreciseTimers {
  const timers = new Timers({ wallNowMs: () => clock.nowMs() });
  return {
    at: (epochMs, callback) => timers.at(epochMs, callback),
    get size() {
      return timers.size;
    },
    close: () => timers.close(),
  };
}
