import { preciseNowMs, type WakeDriver } from "./wake-driver.js";

/** Node clamps longer timeouts to 1 ms (with a warning); longer waits are re-armed in steps. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * Wakes from the main thread's own event loop: a libuv timer gets within a
 * millisecond, then setImmediate turns until the instant passes (libuv timers
 * have whole-millisecond resolution and may run early against this clock).
 */
export function mainThreadDriver(onWake: () => void): WakeDriver {
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  let targetMs: number | null = null;
  let closed = false;

  const clear = () => {
    if (timer) clearTimeout(timer);
    if (immediate) clearImmediate(immediate);
    timer = immediate = undefined;
  };
  const check = () => {
    timer = immediate = undefined;
    if (closed || targetMs === null) return;
    const remainingMs = targetMs - preciseNowMs();
    if (remainingMs <= 0) {
      targetMs = null;
      onWake();
    } else if (remainingMs > 1.5) {
      timer = setTimeout(check, Math.min(MAX_TIMEOUT_MS, Math.floor(remainingMs - 1)));
    } else {
      immediate = setImmediate(check);
    }
  };

  return {
    wakeAt(atMs) {
      if (closed) return;
      clear();
      targetMs = atMs;
      // Never wake synchronously: callbacks must not run inside setTimeout() or cancel().
      if (atMs !== null) immediate = setImmediate(check);
    },
    close() {
      closed = true;
      clear();
    },
  };
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
  let timer: NodeJS.Timeout | undefined;
  let targetMs: number | null = null;
  let closed = false;

  const wait = (remainingMs: number) => {
    // Node runs a timeout of 0 after 1 ms, as it does 1: never inside wakeAt().
    timer = setTimeout(check, Math.min(MAX_TIMEOUT_MS, Math.ceil(remainingMs)));
  };
  const check = () => {
    timer = undefined;
    if (closed || targetMs === null) return;
    const remainingMs = targetMs - preciseNowMs();
    if (remainingMs > 0) return wait(remainingMs);
    targetMs = null;
    onWake();
  };

  return {
    wakeAt(atMs) {
      if (closed) return;
      if (timer) clearTimeout(timer);
      timer = undefined;
      targetMs = atMs;
      if (atMs !== null) wait(atMs - preciseNowMs());
    },
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}
