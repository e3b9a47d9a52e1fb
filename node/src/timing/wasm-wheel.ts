import { dueTick, nowTick } from "./ticks.js";
import type { TimerWheel } from "./timer-wheel.js";
import { instantiateWheel, type WheelExports } from "./wheel-module.js";

/** Handles are generation * 2^28 + index (INDEX_BITS in wheel/assembly/index.ts). */
const HANDLE_INDEX_SPAN = 2 ** 28;

/** The wheel's dense slot index of a handle: a key for side tables that need no hashing. */
export function handleIndex(handle: number): number {
  return handle % HANDLE_INDEX_SPAN;
}

/**
 * The WebAssembly hierarchical timing wheel (wheel/assembly/index.ts) behind
 * the TimerWheel port. Each instance owns its linear memory. Batches cross the
 * boundary through typed-array views of the wheel's input and output buffers;
 * the views are re-made when memory growth detaches the old buffer.
 */
export class TimingWheel implements TimerWheel {
  private readonly wasm: WheelExports;
  private readonly ioCapacity: number;
  private input!: Float64Array;
  private output!: Float64Array;

  constructor(options: { nowMs?: number } = {}) {
    this.wasm = instantiateWheel();
    this.ioCapacity = this.wasm.ioCapacity();
    if (!this.wasm.init(nowTick(options.nowMs ?? Date.now())))
      throw new RangeError("wheel: out of memory");
    this.refreshViews();
  }

  get size(): number {
    return this.wasm.size();
  }

  /** Bytes of linear memory the wheel holds (timers, slots and I/O buffers). */
  get memoryBytes(): number {
    return this.wasm.memory.buffer.byteLength;
  }

  schedule(dueMs: number): number {
    const handle = this.wasm.schedule(dueTick(dueMs));
    if (handle < 0) throw new RangeError("wheel: out of memory");
    return handle;
  }

  /** Schedules many timers with one boundary crossing per buffer-full; returns their handles in order. */
  scheduleMany(dueMs: ArrayLike<number>): Float64Array {
    const ticks = new Float64Array(dueMs.length);
    for (let k = 0; k < ticks.length; k++) ticks[k] = dueTick(dueMs[k]!); // validates all before scheduling any
    const handles = new Float64Array(ticks.length);
    for (let start = 0; start < ticks.length; start += this.ioCapacity) {
      const count = Math.min(this.ioCapacity, ticks.length - start);
      this.refreshViews();
      this.input.set(ticks.subarray(start, start + count));
      const scheduled = this.wasm.scheduleBatch(count);
      this.refreshViews();
      handles.set(this.output.subarray(0, scheduled), start);
      if (scheduled < count) {
        this.cancelMany(handles.subarray(0, start + scheduled)); // all or nothing
        throw new RangeError("wheel: out of memory");
      }
    }
    return handles;
  }

  cancel(handle: number): boolean {
    return this.wasm.cancel(handle) === 1;
  }

  /** Cancels many handles; returns how many were live. */
  cancelMany(handles: ArrayLike<number>): number {
    let cancelled = 0;
    for (let start = 0; start < handles.length; start += this.ioCapacity) {
      const count = Math.min(this.ioCapacity, handles.length - start);
      this.refreshViews();
      for (let k = 0; k < count; k++) this.input[k] = handles[start + k]!;
      cancelled += this.wasm.cancelBatch(count);
    }
    return cancelled;
  }

  advance(nowMs: number): number[] {
    const tick = nowTick(nowMs);
    const expired: number[] = [];
    for (;;) {
      const count = this.wasm.advance(tick);
      this.refreshViews();
      for (let k = 0; k < count; k++) expired.push(this.output[k]!);
      if (count < this.ioCapacity) return expired;
    }
  }

  /**
   * Like advance, without building an array: calls `onExpired` for each handle
   * in order. Expired timers are already gone from the wheel, so a throwing
   * callback does not stop the others; the first error is rethrown at the end.
   */
  forEachExpired(nowMs: number, onExpired: (handle: number) => void): number {
    const tick = nowTick(nowMs);
    let total = 0;
    let failure: { error: unknown } | undefined;
    for (;;) {
      const count = this.wasm.advance(tick);
      this.refreshViews();
      const output = this.output;
      // The try sits outside the hot loop; after a throw the loop resumes at the next handle.
      for (let k = 0; k < count; k++) {
        try {
          for (; k < count; k++) onExpired(output[k]!);
        } catch (error) {
          failure ??= { error };
        }
      }
      total += count;
      if (count < this.ioCapacity) break;
    }
    if (failure) throw failure.error;
    return total;
  }

  nextExpiry(): number | null {
    const tick = this.wasm.nextExpiry();
    return tick < 0 ? null : tick;
  }

  private refreshViews(): void {
    if (this.output?.buffer === this.wasm.memory.buffer) return;
    const buffer = this.wasm.memory.buffer;
    this.input = new Float64Array(buffer, this.wasm.inputBuffer(), this.ioCapacity);
    this.output = new Float64Array(buffer, this.wasm.outputBuffer(), this.ioCapacity);
  }
}
