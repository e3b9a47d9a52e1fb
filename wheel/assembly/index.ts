/**
 * Chronofence's hierarchical timing wheel.
 *
 * Time is an argument: the wheel never reads a clock. The caller passes whole
 * milliseconds ("ticks") as f64; the Node side (node/src/timing/ticks.ts) owns the
 * rounding from fractional milliseconds, always upwards so nothing fires early.
 *
 * Six levels of 64 slots, as in tokio and the Linux kernel. Level L's slots each
 * span 64^L ms, so one level covers 64^(L+1) ms and the whole wheel 2^36 ms
 * (about 795 days) ahead of its position `elapsed`:
 *
 *   level 0: 64 slots x 1 ms          covers 64 ms
 *   level 1: 64 slots x 64 ms         covers ~4 s
 *   level 2: 64 slots x 4096 ms       covers ~4.5 min
 *   level 3: 64 slots x ~4.4 min      covers ~4.7 h
 *   level 4: 64 slots x ~4.7 h        covers ~12.4 days
 *   level 5: 64 slots x ~12.4 days    covers ~795 days
 *
 * A timer goes to the level named by the highest 6-bit group in which its due
 * tick differs from `elapsed`, and to the slot named by that group of its due
 * tick. Example: elapsed = 1000, due = 1100. 1000 ^ 1100 = 0b1_1110_0000, highest
 * set bit 7, so level 1 (bits 6..11), slot (1100 >> 6) & 63 = 17. When the wheel
 * reaches tick 17*64 = 1088 it empties that slot and re-files the timer at level
 * 0, slot 1100 & 63 = 12; at tick 1100 it fires. A timer is touched at most once
 * per level on its way down, and a jump of days costs only the slots that hold
 * timers: the next occupied slot of a level is found from a 64-bit occupancy
 * bitmap with one rotate and one count-trailing-zeros, never by scanning.
 *
 * Timers further than 2^36 ms ahead wait on an overflow list whose minimum due
 * time is tracked; they are filed into the wheel when the wheel's position
 * brings them inside the horizon. Timers due at or before the wheel's position
 * when scheduled go to the ready list and come out on the next advance.
 *
 * Ground rules:
 * - A timer is returned only once `advance(now)` has reached its due tick, and
 *   exactly once unless cancelled first.
 * - Timers still ahead of the wheel's position come out in due order; timers
 *   that were already due when scheduled come out first, in schedule order.
 * - Handles carry a generation: a handle that fired, was cancelled or whose slot
 *   was reused cancels nothing and answers false.
 *
 * Memory: timers live in linear memory as struct-of-arrays (due u64, next u32,
 * prev u32, generation u32: 20 bytes a slot) with an intrusive FIFO free list;
 * the slot lists are circular and doubly linked through sentinel entries, so
 * unlink is O(1) without knowing the slot. No GC runtime is linked (runtime
 * "stub", nothing is allocated): the arrays are placed by hand and grow by a
 * fifth when full, so a live timer costs 20 to 24 bytes.
 */

const LEVELS: u32 = 6;
const SLOT_BITS: u64 = 6;
const SLOTS_PER_LEVEL: u32 = 64;
const HORIZON_TICKS: u64 = 1 << 36;
const SLOT_SENTINELS: u32 = LEVELS * SLOTS_PER_LEVEL;
const READY: u32 = SLOT_SENTINELS;
const OVERFLOW: u32 = SLOT_SENTINELS + 1;
const FIRST_TIMER: u32 = SLOT_SENTINELS + 2;
const NO_TIMER: u32 = 0; // index 0 is a sentinel, so it never names a timer
// A handle is generation * 2^28 + index: 28 index bits (more timers than 4 GiB
// of memory can hold) leave 25 generation bits below 2^53. A stale handle could
// only match again after its index was reused 2^24 times, and the FIFO free
// list spreads reuse over every free index, so that takes billions of reuses.
const INDEX_BITS: u64 = 28;
const MAX_CAPACITY: u32 = 1 << 28;
const GENERATION_MASK: u32 = (1 << 25) - 1;
const INDEX_SPAN: f64 = 268435456.0; // 2^28
const MAX_MEMORY_BYTES: u64 = 1 << 32;
const IO_CAPACITY: u32 = 4096;
const INITIAL_CAPACITY: u32 = 1024;
const BYTES_PER_TIMER: u64 = 20;
const PAGE_BYTES: usize = 65536;

// Fixed regions at the start of the heap, then the timer arrays.
const occupancyPtr: usize = (__heap_base + 15) & ~(<usize>15);
const inputPtr: usize = occupancyPtr + <usize>LEVELS * 8;
const outputPtr: usize = inputPtr + <usize>IO_CAPACITY * 8;
const dueBase: usize = outputPtr + <usize>IO_CAPACITY * 8;

let capacity: u32 = 0;
let nextBase: usize = 0;
let prevBase: usize = 0;
let generationBase: usize = 0;

let elapsed: u64 = 0;
let liveCount: u32 = 0;
let highWater: u32 = FIRST_TIMER;
let freeHead: u32 = NO_TIMER; // FIFO: released at the tail, reused from the head
let freeTail: u32 = NO_TIMER;
let overflowMin: u64 = U64.MAX_VALUE; // a lower bound: not raised when the minimum is cancelled

// Set by findNextSlot().
let nextLevel: u32 = 0;
let nextSlot: u32 = 0;
let nextDeadline: u64 = 0;

// ---- field access -------------------------------------------------------

@inline function dueOf(i: u32): u64 {
  return load<u64>(dueBase + (<usize>i << 3));
}
@inline function setDue(i: u32, due: u64): void {
  store<u64>(dueBase + (<usize>i << 3), due);
}
@inline function nextOf(i: u32): u32 {
  return load<u32>(nextBase + (<usize>i << 2));
}
@inline function setNext(i: u32, v: u32): void {
  store<u32>(nextBase + (<usize>i << 2), v);
}
@inline function prevOf(i: u32): u32 {
  return load<u32>(prevBase + (<usize>i << 2));
}
@inline function setPrev(i: u32, v: u32): void {
  store<u32>(prevBase + (<usize>i << 2), v);
}
@inline function generationOf(i: u32): u32 {
  return load<u32>(generationBase + (<usize>i << 2));
}
@inline function setGeneration(i: u32, v: u32): void {
  store<u32>(generationBase + (<usize>i << 2), v);
}
@inline function occupancy(level: u32): u64 {
  return load<u64>(occupancyPtr + (<usize>level << 3));
}
@inline function setOccupancy(level: u32, bits: u64): void {
  store<u64>(occupancyPtr + (<usize>level << 3), bits);
}

// ---- memory ---------------------------------------------------------------

function layout(cap: u32): void {
  capacity = cap;
  nextBase = dueBase + (<usize>cap << 3);
  prevBase = nextBase + (<usize>cap << 2);
  generationBase = prevBase + (<usize>cap << 2);
}

/** Grows linear memory to hold `endPtr` bytes; 64-bit arithmetic, as 4 GiB does not fit a usize. */
function ensureBytes(endPtr: u64): bool {
  const have = <u64>memory.size() * <u64>PAGE_BYTES;
  if (endPtr <= have) return true;
  if (endPtr > MAX_MEMORY_BYTES) return false;
  const pages = <i32>((endPtr - have + <u64>PAGE_BYTES - 1) / <u64>PAGE_BYTES);
  return memory.grow(pages) >= 0;
}

/**
 * Grows the arrays by a fifth, so a live timer never costs more than 24 bytes
 * (20 x 1.2). Every array moves up, so they are moved back to front and none
 * is overwritten before it is read (memory.copy is a memmove).
 */
function grow(): bool {
  const oldCap = capacity;
  let newCap = oldCap + oldCap / 5;
  if (newCap > MAX_CAPACITY) newCap = MAX_CAPACITY;
  if (newCap <= oldCap) return false;
  if (!ensureBytes(<u64>dueBase + <u64>newCap * BYTES_PER_TIMER)) return false;
  const oldNext = nextBase;
  const oldPrev = prevBase;
  const oldGeneration = generationBase;
  layout(newCap);
  memory.copy(generationBase, oldGeneration, <usize>oldCap << 2);
  memory.fill(generationBase + (<usize>oldCap << 2), 0, <usize>(newCap - oldCap) << 2);
  memory.copy(prevBase, oldPrev, <usize>oldCap << 2);
  memory.copy(nextBase, oldNext, <usize>oldCap << 2);
  return true;
}

function allocate(): u32 {
  let i = freeHead;
  if (i != NO_TIMER) {
    freeHead = nextOf(i);
    if (freeHead == NO_TIMER) freeTail = NO_TIMER;
  } else {
    if (highWater == capacity && !grow()) return NO_TIMER;
    i = highWater++;
  }
  setGeneration(i, (generationOf(i) + 1) & GENERATION_MASK); // now odd: live
  liveCount++;
  return i;
}

function release(i: u32): void {
  setGeneration(i, (generationOf(i) + 1) & GENERATION_MASK); // now even: free
  setNext(i, NO_TIMER);
  if (freeTail == NO_TIMER) freeHead = i;
  else setNext(freeTail, i);
  freeTail = i;
  liveCount--;
}

@inline function handleOf(i: u32): f64 {
  return <f64>generationOf(i) * INDEX_SPAN + <f64>i;
}

// ---- lists ----------------------------------------------------------------

@inline function isEmpty(list: u32): bool {
  return nextOf(list) == list;
}

function linkTail(list: u32, i: u32): void {
  const tail = prevOf(list);
  setNext(tail, i);
  setPrev(i, tail);
  setNext(i, list);
  setPrev(list, i);
}

function unlink(i: u32): void {
  const p = prevOf(i);
  const n = nextOf(i);
  setNext(p, n);
  setPrev(n, p);
  // Only a sentinel and this timer formed the ring: the slot is now empty.
  if (p == n && p < SLOT_SENTINELS) clearOccupied(p);
}

function clearOccupied(sentinel: u32): void {
  const level = sentinel >> 6;
  setOccupancy(level, occupancy(level) & ~((<u64>1) << (sentinel & 63)));
}

/** Moves the whole ring of `from` to the tail of `to` in O(1). */
function spliceAll(from: u32, to: u32): void {
  if (isEmpty(from)) return;
  const first = nextOf(from);
  const last = prevOf(from);
  const tail = prevOf(to);
  setNext(tail, first);
  setPrev(first, tail);
  setNext(last, to);
  setPrev(to, last);
  setNext(from, from);
  setPrev(from, from);
}

// ---- placement --------------------------------------------------------------

@inline function levelFor(due: u64): u32 {
  let masked = (elapsed ^ due) | 63;
  if (masked >= HORIZON_TICKS) masked = HORIZON_TICKS - 1;
  return <u32>((63 - clz<u64>(masked)) / SLOT_BITS);
}

function place(i: u32): void {
  const due = dueOf(i);
  if (due <= elapsed) {
    linkTail(READY, i);
    return;
  }
  if (due - elapsed >= HORIZON_TICKS) {
    linkTail(OVERFLOW, i);
    if (due < overflowMin) overflowMin = due;
    return;
  }
  const level = levelFor(due);
  const slot = <u32>((due >> (<u64>level * SLOT_BITS)) & 63);
  linkTail(level * SLOTS_PER_LEVEL + slot, i);
  setOccupancy(level, occupancy(level) | ((<u64>1) << slot));
}

/**
 * When to pull from the overflow list: the first level-5 slot boundary (2^30 ms)
 * at which its earliest timer is inside the horizon. Pulling only on those
 * boundaries brings in a whole slot's worth of timers at once, so a long jump
 * scans the overflow list at most once per 2^30 ms, not once per timer.
 */
function overflowPullTick(): u64 {
  const slotTicks: u64 = HORIZON_TICKS >> SLOT_BITS;
  const earliest = overflowMin - HORIZON_TICKS + 1;
  return (earliest + slotTicks - 1) & ~(slotTicks - 1);
}

/** Files every overflow timer now inside the horizon, and recomputes the exact minimum of the rest. */
function pullOverflow(): void {
  let i = nextOf(OVERFLOW);
  setNext(OVERFLOW, OVERFLOW);
  setPrev(OVERFLOW, OVERFLOW);
  overflowMin = U64.MAX_VALUE;
  while (i != OVERFLOW) {
    const after = nextOf(i);
    place(i);
    i = after;
  }
}

/** Finds the earliest occupied slot (tokio's next_expiration). The lowest occupied level always holds the earliest timers. */
function findNextSlot(): bool {
  for (let level: u32 = 0; level < LEVELS; level++) {
    const bits = occupancy(level);
    if (bits == 0) continue;
    const shift = <u64>level * SLOT_BITS;
    const slotTicks: u64 = (<u64>1) << shift;
    const levelTicks: u64 = slotTicks << SLOT_BITS;
    // Search from the slot after the position's own. Below level 5 the position's
    // slot is always empty; at level 5 it, and any slot behind it, can only hold
    // timers of the next round (due in the next 2^36 block), so it comes last.
    const from = ((elapsed >> shift) + 1) & 63;
    const slot = (ctz<u64>(rotr<u64>(bits, from)) + from) & 63;
    let deadline = (elapsed & ~(levelTicks - 1)) + slot * slotTicks;
    if (deadline <= elapsed) deadline += levelTicks;
    nextLevel = level;
    nextSlot = <u32>slot;
    nextDeadline = deadline;
    return true;
  }
  return false;
}

/** Empties the slot found by findNextSlot(); `elapsed` is already its deadline. */
function expireSlot(level: u32, slot: u32): void {
  const sentinel = level * SLOTS_PER_LEVEL + slot;
  setOccupancy(level, occupancy(level) & ~((<u64>1) << slot));
  if (level == 0) {
    spliceAll(sentinel, READY); // every timer in a level-0 slot is due at exactly this tick
    return;
  }
  let i = nextOf(sentinel);
  setNext(sentinel, sentinel);
  setPrev(sentinel, sentinel);
  while (i != sentinel) {
    const after = nextOf(i);
    place(i); // due now: to READY; otherwise down to a lower level
    i = after;
  }
}

/** Hands out timers from the head of the ready list; walks it and relinks the sentinel once, touching no prev links. */
function drainReady(count: u32): u32 {
  let i = nextOf(READY);
  while (count < IO_CAPACITY && i != READY) {
    const after = nextOf(i);
    store<f64>(outputPtr + (<usize>count << 3), handleOf(i));
    release(i);
    count++;
    i = after;
  }
  setNext(READY, i);
  setPrev(i, READY);
  return count;
}

// ---- exports ------------------------------------------------------------------

/** Resets the wheel with its position at `nowTick`. Call once before anything else. */
export function init(nowTick: f64): bool {
  if (capacity == 0) {
    if (!ensureBytes(<u64>dueBase + <u64>INITIAL_CAPACITY * BYTES_PER_TIMER)) return false;
    layout(INITIAL_CAPACITY);
  }
  memory.fill(generationBase, 0, <usize>capacity << 2);
  for (let s: u32 = 0; s < FIRST_TIMER; s++) {
    setNext(s, s);
    setPrev(s, s);
  }
  for (let level: u32 = 0; level < LEVELS; level++) setOccupancy(level, 0);
  elapsed = <u64>nowTick;
  liveCount = 0;
  highWater = FIRST_TIMER;
  freeHead = NO_TIMER;
  freeTail = NO_TIMER;
  overflowMin = U64.MAX_VALUE;
  return true;
}

/** Schedules a timer due at `dueTick` (a whole, non-negative number). Returns its handle, or -1 when memory is exhausted. */
export function schedule(dueTick: f64): f64 {
  const i = allocate();
  if (i == NO_TIMER) return -1;
  setDue(i, <u64>dueTick);
  place(i);
  return handleOf(i);
}

/** Schedules `count` timers whose due ticks are in the input buffer; their handles go to the output buffer. Returns how many were scheduled. */
export function scheduleBatch(count: u32): u32 {
  if (count > IO_CAPACITY) count = IO_CAPACITY;
  for (let k: u32 = 0; k < count; k++) {
    const handle = schedule(load<f64>(inputPtr + (<usize>k << 3)));
    if (handle < 0) return k;
    store<f64>(outputPtr + (<usize>k << 3), handle);
  }
  return count;
}

/** Cancels a live timer. False for a handle that fired, was cancelled, was reused, or never existed. */
export function cancel(handle: f64): bool {
  if (!(handle >= 0) || handle >= 9007199254740992.0) return false;
  const bits = <u64>handle;
  if (<f64>bits != handle) return false; // not a whole number
  const i = <u32>(bits & ((<u64>1 << INDEX_BITS) - 1));
  const generation = <u32>(bits >> INDEX_BITS);
  if (i < FIRST_TIMER || i >= highWater) return false;
  if ((generation & 1) == 0 || generationOf(i) != generation) return false;
  unlink(i);
  release(i);
  return true;
}

/** Cancels the `count` handles in the input buffer; returns how many were live. */
export function cancelBatch(count: u32): u32 {
  if (count > IO_CAPACITY) count = IO_CAPACITY;
  let cancelled: u32 = 0;
  for (let k: u32 = 0; k < count; k++) {
    if (cancel(load<f64>(inputPtr + (<usize>k << 3)))) cancelled++;
  }
  return cancelled;
}

/**
 * Moves the wheel to `nowTick` and writes the handles of expired timers to the
 * output buffer. Returns how many it wrote; when that equals the buffer's
 * capacity, call again with the same `nowTick` for the rest. A `nowTick`
 * behind the position (a clock that went back) moves nothing.
 */
export function advance(nowTick: f64): u32 {
  let count = drainReady(0);
  if (count == IO_CAPACITY || !(nowTick >= 0)) return count;
  const now = <u64>nowTick;
  if (now <= elapsed) return count;
  while (true) {
    const hasSlot = findNextSlot();
    const slotAt = hasSlot ? nextDeadline : U64.MAX_VALUE;
    if (!isEmpty(OVERFLOW)) {
      const pullAt = overflowPullTick();
      // Strictly before the slot: landing on a slot's own tick without emptying
      // it would make it look like the position's slot, a whole round away.
      if (pullAt < slotAt && pullAt <= now) {
        if (pullAt > elapsed) elapsed = pullAt;
        pullOverflow();
        continue;
      }
    }
    if (slotAt > now) break;
    elapsed = slotAt;
    expireSlot(nextLevel, nextSlot);
    count = drainReady(count);
    if (count == IO_CAPACITY) return count;
  }
  elapsed = now;
  return count;
}

/** A lower bound of the next due tick (exact when the next timer is in level 0), or -1 when the wheel is empty. */
export function nextExpiry(): f64 {
  if (!isEmpty(READY)) return <f64>elapsed;
  let at = findNextSlot() ? nextDeadline : U64.MAX_VALUE;
  if (!isEmpty(OVERFLOW) && overflowMin < at) at = overflowMin;
  return at == U64.MAX_VALUE ? -1 : <f64>at;
}

export function size(): u32 {
  return liveCount;
}

export function position(): f64 {
  return <f64>elapsed;
}

export function inputBuffer(): usize {
  return inputPtr;
}

export function outputBuffer(): usize {
  return outputPtr;
}

export function ioCapacity(): u32 {
  return IO_CAPACITY;
}
