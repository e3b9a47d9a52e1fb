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
