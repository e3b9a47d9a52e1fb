import { performance } from "node:perf_hooks";
import { TimingWheel } from "../adapters/wasm/wasm-wheel.js";
import type { WakeDriverFactory } from "./wake-driver.js";
import { workerThreadDriver } from "./worker-thread-driver.js";

/**
 * In-process timers on the Wasm wheel, for latency-sensitive callers.
 *
 * The wheel keeps whole milliseconds; sub-millisecond precision comes from a
 * one-tick lookahead: each wake advances the wheel to now + 1 ms and holds the
 * timers it returns in a small "imminent" list sorted by their exact due
 * times, which the driver then wakes for. So a callback runs as soon after
 * its due instant as the driver can wake, never before it.
 *
 * Times: setTimeout counts from a monotonic clock (performance.now());
 * at(epochMs) is converted to it once, when scheduled.
 */

export type TimerCallback<A extends unknown[]> = (...args: A) => void;
export type TimerErrorHandler = (error: unknown, timer: Timer) => void;

export interface TimersOptions {
  /** How the loop wakes up: a sleeper thread (default) or the main thread's event loop. */
  driver?: WakeDriverFactory;
  /** Receives errors thrown by callbacks; the default prints them to stderr. Firing continues either way. */
  onError?: TimerErrorHandler;
  /** Precise epoch milliseconds; injectable for tests. */
  preciseNowMs?: () => number;
  /** Epoch milliseconds of the wall clock, used to convert at() times. */
  wallNowMs?: () => number;
}

export class Timer {
  /** @internal */ handle = -1;
  /** @internal */ imminent = false;
  private active = true;

  constructor(
    /** Precise-epoch instant at which the callback becomes due. */
    readonly dueMs: number,
    /** @internal */ readonly callback: (...args: unknown[]) => void,
    /** @internal */ readonly args: unknown[],
    private readonly owner: Timers,
  ) {}

  get pending(): boolean {
    return this.active;
  }

  /** Cancels the timer; false when it already fired or was cancelled. */
  cancel(): boolean {
    if (!this.active) return false;
    this.active = false;
    this.owner.forget(this);
    return true;
  }

  /** @internal */ markFired(): void {
    this.active = false;
  }
}

const defaultPreciseNowMs = () => performance.timeOrigin + performance.now();

export class Timers {
  private readonly wheel: TimingWheel;
  /** Timers still in the wheel, by the wheel's slot index (the handle's low 32 bits): dense, no hashing. */
  private readonly inWheel: (Timer | undefined)[] = new Array(1024).fill(undefined);
  private imminent: Timer[] = [];
  private readonly driver: ReturnType<WakeDriverFactory>;
  private readonly onError: TimerErrorHandler;
  private readonly preciseNowMs: () => number;
  private readonly wallNowMs: () => number;
  private requestedWakeMs: number | null = null;
  private closed = false;

  constructor(options: TimersOptions = {}) {
    this.preciseNowMs = options.preciseNowMs ?? defaultPreciseNowMs;
    this.wallNowMs = options.wallNowMs ?? Date.now;
    this.onError = options.onError ?? reportToStderr;
    this.wheel = new TimingWheel({ nowMs: this.preciseNowMs() });
    this.driver = (options.driver ?? workerThreadDriver)(() => this.run());
  }

  /** Live timers. */
  get size(): number {
    return this.wheel.size + this.imminent.length;
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
    for (const timer of this.inWheel) timer?.markFired();
    for (const timer of this.imminent) timer.markFired();
    this.inWheel.length = 0;
    this.imminent = [];
  }

  /** @internal Called by Timer.cancel(). */
  forget(timer: Timer): void {
    if (timer.imminent) {
      this.imminent.splice(this.imminent.indexOf(timer), 1);
    } else {
      this.wheel.cancel(timer.handle);
      this.inWheel[slotOf(timer.handle)] = undefined;
    }
    this.rearm();
  }

  private add<A extends unknown[]>(dueMs: number, callback: TimerCallback<A>, args: A): Timer {
    if (this.closed) throw new Error("Timers: closed");
    if (typeof callback !== "function") throw new TypeError("Timers: callback must be a function");
    const timer = new Timer(dueMs, callback as (...args: unknown[]) => void, args, this);
    timer.handle = this.wheel.schedule(dueMs);
    this.inWheel[slotOf(timer.handle)] = timer;
    // The lookahead collects this timer at its tick minus one; wake earlier only if that is sooner.
    const collectMs = Math.ceil(dueMs) - 1;
    if (this.requestedWakeMs === null || collectMs < this.requestedWakeMs)
      this.requestWake(collectMs);
    return timer;
  }

  private run(): void {
    this.requestedWakeMs = null;
    const nowMs = this.preciseNowMs();
    this.collectImminent(nowMs);
    let fired = 0;
    while (fired < this.imminent.length && this.imminent[fired]!.dueMs <= nowMs) fired++;
    const due = this.imminent.splice(0, fired);
    for (const timer of due) {
      timer.markFired();
      try {
        timer.callback(...timer.args);
      } catch (error) {
        this.onError(error, timer);
      }
      if (this.closed) return;
    }
    this.rearm();
  }

  /** Moves every timer due within the next tick out of the wheel into the sorted imminent list. */
  private collectImminent(nowMs: number): void {
    const before = this.imminent.length;
    this.wheel.forEachExpired(nowMs + 1, (handle) => {
      const slot = slotOf(handle);
      const timer = this.inWheel[slot]!;
      this.inWheel[slot] = undefined;
      timer.imminent = true;
      this.imminent.push(timer);
    });
    if (this.imminent.length > before) this.imminent.sort((a, b) => a.dueMs - b.dueMs);
  }

  private rearm(): void {
    if (this.closed) return;
    const wheelTick = this.wheel.nextExpiry();
    // The wheel returns tick T's timers once advanced to T, which the lookahead reaches at T - 1.
    let wakeMs = wheelTick === null ? null : wheelTick - 1;
    const first = this.imminent[0];
    if (first && (wakeMs === null || first.dueMs < wakeMs)) wakeMs = first.dueMs;
    if (wakeMs !== this.requestedWakeMs) this.requestWake(wakeMs);
  }

  private requestWake(atMs: number | null): void {
    this.requestedWakeMs = atMs;
    this.driver.wakeAt(atMs);
  }
}

function slotOf(handle: number): number {
  return handle % 4294967296;
}

function reportToStderr(error: unknown): void {
  console.error("chronofence Timers: a timer callback threw; other timers keep firing.", error);
}
