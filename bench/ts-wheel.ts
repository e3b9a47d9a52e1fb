import { dueTick, nowTick } from "../node/src/timing/ticks.js";
import type { TimerWheel } from "../node/src/timing/timer-wheel.js";

/**
 * The same hierarchical wheel as wheel/assembly/index.ts (read its header),
 * written as idiomatic TypeScript with one object per timer and Maps for
 * handles. It is the yardstick the Wasm wheel is benchmarked against; the
 * property tests hold both to the reference model.
 *
 * JS bit operators are 32-bit, so 64-bit tick arithmetic is done on numbers
 * (exact below 2^53) and the XOR that picks a level on two 32-bit halves.
 */

const LEVELS = 6;
const SLOTS = 64;
const HORIZON_TICKS = 2 ** 36;
const TWO_TO_32 = 2 ** 32;

interface TimerNode {
  handle: number;
  dueTick: number;
  next: TimerNode | null;
  prev: TimerNode | null;
  list: TimerList | null;
}

class TimerList {
  head: TimerNode | null = null;
  tail: TimerNode | null = null;
  count = 0;

  /** `level` is -1 for the ready and overflow lists. */
  constructor(readonly level: number) {}

  push(node: TimerNode): void {
    node.prev = this.tail;
    node.next = null;
    node.list = this;
    if (this.tail) this.tail.next = node;
    else this.head = node;
    this.tail = node;
    this.count++;
  }

  remove(node: TimerNode): void {
    if (node.prev) node.prev.next = node.next;
    else this.head = node.next;
    if (node.next) node.next.prev = node.prev;
    else this.tail = node.prev;
    node.next = node.prev = null;
    node.list = null;
    this.count--;
  }

  takeAll(): TimerNode | null {
    const first = this.head;
    this.head = this.tail = null;
    this.count = 0;
    return first;
  }
}

/** The first level-5 slot boundary at which the earliest overflow timer is inside the horizon. */
function overflowPullTick(overflowMin: number): number {
  const slotTicks = HORIZON_TICKS / SLOTS;
  return Math.ceil((overflowMin - HORIZON_TICKS + 1) / slotTicks) * slotTicks;
}

function highestDifferingBit(a: number, b: number): number {
  const hi = (Math.floor(a / TWO_TO_32) ^ Math.floor(b / TWO_TO_32)) >>> 0;
  if (hi !== 0) return 63 - Math.clz32(hi);
  const lo = (((a >>> 0) ^ (b >>> 0)) | 63) >>> 0;
  return 31 - Math.clz32(lo);
}

export class TsTimingWheel implements TimerWheel {
  private readonly slots: TimerList[][] = Array.from({ length: LEVELS }, (_, level) =>
    Array.from({ length: SLOTS }, () => new TimerList(level)),
  );
  private readonly timersPerLevel: number[] = new Array(LEVELS).fill(0);
  private readonly ready = new TimerList(-1);
  private readonly overflow = new TimerList(-1);
  private overflowMin = Number.POSITIVE_INFINITY; // a lower bound: not raised when the minimum is cancelled
  private readonly live = new Map<number, TimerNode>();
  private elapsed: number;
  private nextHandle = 1;

  constructor(options: { nowMs?: number } = {}) {
    this.elapsed = nowTick(options.nowMs ?? Date.now());
  }

  get size(): number {
    return this.live.size;
  }

  schedule(dueMs: number): number {
    const node: TimerNode = {
      handle: this.nextHandle++,
      dueTick: dueTick(dueMs),
      next: null,
      prev: null,
      list: null,
    };
    this.live.set(node.handle, node);
    this.place(node);
    return node.handle;
  }

  cancel(handle: number): boolean {
    const node = this.live.get(handle);
    if (!node) return false;
    this.detach(node);
    this.live.delete(handle);
    return true;
  }

  advance(nowMs: number): number[] {
    const expired: number[] = [];
    this.drainReady(expired);
    const now = nowTick(nowMs);
    while (now > this.elapsed) {
      const slot = this.findNextSlot();
      const slotAt = slot ? slot.deadline : Number.POSITIVE_INFINITY;
      const pullAt = this.overflow.head
        ? overflowPullTick(this.overflowMin)
        : Number.POSITIVE_INFINITY;
      // Strictly before the slot: see advance() in wheel/assembly/index.ts.
      if (pullAt < slotAt && pullAt <= now) {
        this.elapsed = Math.max(this.elapsed, pullAt);
        this.overflowMin = Number.POSITIVE_INFINITY;
        this.refile(this.overflow);
        continue;
      }
      if (!slot || slotAt > now) {
        this.elapsed = now;
        break;
      }
      this.elapsed = slotAt;
      const list = this.slots[slot.level]![slot.slot]!;
      this.timersPerLevel[slot.level]! -= list.count;
      this.refile(list);
      this.drainReady(expired);
    }
    return expired;
  }

  nextExpiry(): number | null {
    if (this.ready.head) return this.elapsed;
    let at = this.findNextSlot()?.deadline ?? Number.POSITIVE_INFINITY;
    if (this.overflow.head) at = Math.min(at, this.overflowMin);
    return at === Number.POSITIVE_INFINITY ? null : at;
  }

  private place(node: TimerNode): void {
    const due = node.dueTick;
    if (due <= this.elapsed) {
      this.ready.push(node);
      return;
    }
    if (due - this.elapsed >= HORIZON_TICKS) {
      this.overflowMin = Math.min(this.overflowMin, due);
      this.overflow.push(node);
      return;
    }
    const level = Math.floor(Math.min(35, highestDifferingBit(this.elapsed, due)) / 6);
    const slot = Math.floor(due / SLOTS ** level) % SLOTS;
    this.slots[level]![slot]!.push(node);
    this.timersPerLevel[level]!++;
  }

  private detach(node: TimerNode): void {
    const list = node.list!;
    list.remove(node);
    if (list.level >= 0) this.timersPerLevel[list.level]!--;
  }

  private refile(list: TimerList): void {
    for (let node = list.takeAll(); node; ) {
      const next = node.next;
      node.next = node.prev = null;
      node.list = null;
      this.place(node);
      node = next;
    }
  }

  private drainReady(expired: number[]): void {
    for (let node = this.ready.takeAll(); node; node = node.next) {
      node.list = null;
      this.live.delete(node.handle);
      expired.push(node.handle);
    }
  }

  /** The earliest occupied slot: scans from the position's slot at the lowest occupied level. */
  private findNextSlot(): { level: number; slot: number; deadline: number } | null {
    for (let level = 0; level < LEVELS; level++) {
      if (this.timersPerLevel[level] === 0) continue;
      const slotTicks = SLOTS ** level;
      const levelTicks = slotTicks * SLOTS;
      const nowSlot = Math.floor(this.elapsed / slotTicks) % SLOTS;
      // From the slot after the position's own: see findNextSlot in wheel/assembly/index.ts.
      for (let k = 1; k <= SLOTS; k++) {
        const slot = (nowSlot + k) % SLOTS;
        if (!this.slots[level]![slot]!.head) continue;
        let deadline = this.elapsed - (this.elapsed % levelTicks) + slot * slotTicks;
        if (deadline <= this.elapsed) deadline += levelTicks;
        return { level, slot, deadline };
      }
    }
    return null;
  }
}
