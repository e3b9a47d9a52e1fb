import { preciseNowMs, type WakeDriver } from "./wake-driver.js";

/** Node clamps longer timeouts to 1 ms (with a warning); longer waits are re-armed in steps. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * Wakes from the main thread's own event loop: a libuv timer gets within a
 * millisecond, then setImmediate turns until the instant passes (libuv timers
 * have whole-millisecond resolution and may run early against this clock).
 */
export function mainThreadDriver(onWake: () => void): WakeDriver {
  return eventLoopDriver(onWake, 1.5);
}

/**
 * Wakes from one libuv timer of the main thread's event loop, at a whole
 * millisecond of its clock: at most about a millisecond late (Timers never
 * runs a timer early, whatever the driver), with no thread and no polling
 * turns. What the dispatcher's wheel uses: on a loop that is busy anyway, a
 * sleeper thread's wake each due millisecond cost more CPU than it bought
 * (bench/RESULTS.md, end to end, session 29).
 */
export function loopTimerDriver(onWake: () => void): WakeDriver {
  return eventLoopDriver(onWake, 0);
}

/**
 * Both: with `pollWithinMs` 0, one libuv timer set past the instant, rounded
 * up to its millisecond; otherwise a timer to about a millisecond short of
 * the instant, then setImmediate turns within `pollWithinMs` of it.
 */
function eventLoopDriver(onWake: () => void, pollWithinMs: number): WakeDriver {
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  let targetMs: number | null = null;
  let closed = false;

  const clear = () => {
    if (timer) clearTimeout(timer);
    if (immediate) clearImmediate(immediate);
    timer = immediate = undefined;
  };
  // Never wakes synchronously: callbacks must not run inside setTimeout() or cancel().
  const wait = (remainingMs: number) => {
    if (pollWithinMs === 0) {
      // Node runs a timeout of 0 (or less) after 1 ms, as it does 1.
      timer = setTimeout(check, Math.min(MAX_TIMEOUT_MS, Math.ceil(remainingMs)));
    } else if (remainingMs > pollWithinMs) {
      timer = setTimeout(check, Math.min(MAX_TIMEOUT_MS, Math.floor(remainingMs - 1)));
    } else {
      immediate = setImmediate(check);
    }
  };
  const check = () => {
    timer = immediate = undefined;
    if (closed || targetMs === null) return;
    const remainingMs = targetMs - preciseNowMs();
    if (remainingMs > 0) return wait(remainingMs);
    targetMs = null;
    onWake();
  };

  return {
    wakeAt(atMs) {
      if (closed) return;
      clear();
      targetMs = atMs;
      if (atMs !== null) wait(atMs - preciseNowMs());
    },
    close() {
      closed = true;
      clear();
    },
  };
}
