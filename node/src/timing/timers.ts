import { mainThreadDriver } from "./main-thread-driver.js";
import { dueTick } from "./ticks.js";
import { Timer, type TimerOwner } from "./timer.js";
import { preciseNowMs, type WakeDriver, type WakeDriverFactory } from "./wake-driver.js";
import { handleIndex, TimingWheel } from "./wasm-wheel.js";

/**
 * In-process timers on the Wasm wheel, for latency-sensitive callers.
 *
 * The wheel keeps whole milliseconds; sub-millisecond precision comes from a
 * one-tick lookahead: each wake advances the wheel to now + 1 ms and holds the
 * timers it returns in a small "imminent" list sorted by their exact due
 * times, which the driver then wakes for. So a callback runs as soon after
 * its due instant as the driver can wake, never before it.
 *
 * Callbacks never run inside setTimeout(), at() or cancel(): only from a
 * wake, one batch at a time, in due order. A callback may schedule, cancel
 * (also timers of its own batch) or close(); what it schedules runs in a
 * later batch, as with Node's timers.
 *
 * Times: setTimeout counts from a monotonic clock (performance.now());
 * at(epochMs) is converted to it once, when scheduled.
 */

export { Timer } from "./timer.js";
export type TimerCallback<A extends unknown[]> = (...args: A) => void;
export type TimerErrorHandler = (error: unknown, timer: Timer) => void;

export interface TimersOptions {
  /**
   * How the loop wakes up. The default, the main thread's event loop, measured the more
   * precise (bench:wheel): it turns setImmediate for the last ~1.5 ms before a due instant,
   * which costs CPU; `workerThreadDriver` sleeps in another thread instead, for a little
   * more lateness (about 0.05 ms at the median).
   */
  driver?: WakeDriverFactory;
  /** Receives errors thrown by callbacks; the default prints them to stderr. Firing continues either way. */
  onError?: TimerErrorHandler;
  /** Precise epoch milliseconds; injectable for tests. */
  preciseNowMs?: () => number;
  /** Epoch milliseconds of the wall clock, used to convert at() times. */
  wallNowMs?: () => number;
}

/** "The driver's request is unknown": differs from every wake time, so the next rearm always tells it. */
const UNKNOWN_WAKE = Number.NaN;
/** The longest one wake keeps firing batches before yielding to the event loop. */
const MAX_TURN_MS = 5;

export class Timers implements TimerOwner {
  private readonly wheel: TimingWheel;
  /** Timers still in the wheel, by the handle's dense index: no hashing. */
  private readonly inWheel: (Timer | undefined)[] = new Array(1024).fill(undefined);
  private imminent: Timer[] = [];
  private firing: Timer[] = [];
  private readonly driver: WakeDriver;
  private readonly onError: TimerErrorHandler;
  private readonly preciseNowMs: () => number;
  private readonly wallNowMs: () => number;
  private requestedWakeMs: number | null = null;
  private closed = false;

  constructor(options: TimersOptions = {}) {
    this.preciseNowMs = options.preciseNowMs ?? preciseNowMs;
    this.wallNowMs = options.wallNowMs ?? Date.now;
    this.onError = options.onError ?? reportToStderr;
    this.wheel = new TimingWheel({ nowMs: this.preciseNowMs() });
    this.driver = (options.driver ?? mainThreadDriver)(() => this.run());
  }

  /** Pending timers. */
  get size(): number {
    return this.wheel.size + this.imminent.length + this.firing.filter((t) => t.pending).length;
  }

  setTimeout<A extends unknown[]>(callback: TimerCallback<A>, delayMs: number, ...args: A): Timer {
    if (!(delayMs >= 0) || !Number.isFinite(delayMs)) delayMs = 0; // as Node does for bad delays
    return this.add(this.preciseNowMs() + delayMs, callback, args);
  }

  /** Runs `callback` at the wall-clock instant `epochMs`. */
  at<A extends unknown[]>(epochMs: number, callback: TimerCallback<A>, ...args: A): Timer {
    if (!Number.isFinite(epochMs))
      throw new RangeError(`at(): epochMs must be finite, got ${epochMs}`);
    return this.add(this.preciseNowMs() + (epochMs - this.wallNowMs()), callback, args);
  }

  /** Cancels every timer and stops the driver; the process may exit afterwards. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.driver.close();
    for (const timer of [...this.inWheel, ...this.imminent, ...this.firing]) {
      if (timer) timer.state = "done";
    }
    this.inWheel.length = 0;
    this.imminent = [];
    this.firing = [];
  }

  /** @internal Called by Timer.cancel() while the timer is still pending. */
  forget(timer: Timer): void {
    if (timer.state === "wheel") {
      this.wheel.cancel(timer.handle);
      this.inWheel[handleIndex(timer.handle)] = undefined;
    } else if (timer.state === "imminent") {
      this.imminent.splice(this.imminent.indexOf(timer), 1);
    }
    // "firing": the running batch skips it. Either way the wake may now be later.
    if (!this.closed && this.firing.length === 0) this.rearm();
  }

  private add<A extends unknown[]>(dueMs: number, callback: TimerCallback<A>, args: A): Timer {
    if (this.closed) throw new Error("Timers: closed");
    if (typeof callback !== "function") throw new TypeError("Timers: callback must be a function");
    const timer = new Timer(dueMs, callback as (...args: unknown[]) => void, args, this);
    timer.handle = this.wheel.schedule(dueMs);
    this.inWheel[handleIndex(timer.handle)] = timer;
    // Wake earlier only if this timer's collection is sooner than the wake already asked for.
    const collectMs = lookaheadCollectMs(dueTick(dueMs));
    if (
      this.firing.length === 0 &&
      (this.requestedWakeMs === null || collectMs < this.requestedWakeMs)
    ) {
      this.requestWake(collectMs);
    }
    return timer;
  }

  private run(): void {
    if (this.closed || this.firing.length > 0) return;
    this.requestedWakeMs = UNKNOWN_WAKE; // the wake that brought us here is used up
    const startedMs = this.preciseNowMs();
    let nowMs = startedMs;
    try {
      // Timers that fall due while a batch runs go in the next batch now, not after another wake,
      // as long as this turn of the event loop has not run too long.
      do {
        this.fireBatch(nowMs);
        nowMs = this.preciseNowMs();
      } while (!this.closed && nowMs - startedMs < MAX_TURN_MS && this.nextDueMs() <= nowMs);
    } finally {
      this.firing = [];
      if (!this.closed) this.rearm();
    }
  }

  private fireBatch(nowMs: number): void {
    this.collectImminent(nowMs);
    let due = 0;
    while (due < this.imminent.length && this.imminent[due]!.dueMs <= nowMs) due++;
    this.firing = this.imminent.splice(0, due);
    for (const timer of this.firing) timer.state = "firing";
    for (const timer of this.firing) this.fire(timer);
    this.firing = [];
  }

  /** When the loop must next act: the first imminent due time, or the lookahead's collection time. */
  private nextDueMs(): number {
    const wheelTick = this.wheel.nextExpiry();
    const collectMs = wheelTick === null ? Number.POSITIVE_INFINITY : lookaheadCollectMs(wheelTick);
    return Math.min(collectMs, this.imminent[0]?.dueMs ?? Number.POSITIVE_INFINITY);
  }

  private fire(timer: Timer): void {
    if (timer.state !== "firing") return; // cancelled by an earlier callback of this batch, or closed
    timer.state = "done";
    try {
      timer.callback(...timer.args);
    } catch (error) {
      try {
        this.onError(error, timer);
      } catch (reportingError) {
        reportToStderr(reportingError);
      }
    }
  }

  /** Moves every timer due within the next tick out of the wheel into the sorted imminent list. */
  private collectImminent(nowMs: number): void {
    const before = this.imminent.length;
    this.wheel.forEachExpired(nowMs + 1, (handle) => {
      const index = handleIndex(handle);
      const timer = this.inWheel[index]!;
      this.inWheel[index] = undefined;
      timer.state = "imminent";
      this.imminent.push(timer);
    });
    if (this.imminent.length > before) this.imminent.sort((a, b) => a.dueMs - b.dueMs);
  }

  private rearm(): void {
    const dueMs = this.nextDueMs();
    const wakeMs = dueMs === Number.POSITIVE_INFINITY ? null : dueMs;
    if (wakeMs !== this.requestedWakeMs) this.requestWake(wakeMs);
  }

  private requestWake(atMs: number | null): void {
    this.requestedWakeMs = atMs;
    this.driver.wakeAt(atMs);
  }
}

/** The wheel returns tick T's timers once advanced to T, which the one-tick lookahead reaches at T - 1. */
function lookaheadCollectMs(tick: number): number {
  return tick - 1;
}

function reportToStderr(error: unknown): void {
  console.error("chronofence Timers: a timer callback threw; other timers keep firing.", error);
}
