/**
 * Where a timer is in its life. Only "wheel", "imminent" and "firing" are
 * pending; "firing" means it is in the batch being run right now.
 */
export type TimerState = "wheel" | "imminent" | "firing" | "done";

export interface TimerOwner {
  forget(timer: Timer): void;
}

/** A scheduled callback, as returned by Timers.setTimeout() and Timers.at(). */
export class Timer {
  /** @internal The wheel handle while the timer is in the wheel. */
  handle = -1;
  /** @internal */
  state: TimerState = "wheel";

  constructor(
    /** Precise-epoch instant at which the callback becomes due. */
    readonly dueMs: number,
    /** @internal */ readonly callback: (...args: unknown[]) => void,
    /** @internal */ readonly args: unknown[],
    private readonly owner: TimerOwner,
  ) {}

  /** True until the callback has run or the timer was cancelled. */
  get pending(): boolean {
    return this.state !== "done";
  }

  /** Cancels the timer; false when it already fired or was cancelled. */
  cancel(): boolean {
    if (this.state === "done") return false;
    this.owner.forget(this);
    this.state = "done";
    return true;
  }
}
