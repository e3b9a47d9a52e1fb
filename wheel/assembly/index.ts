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
 *   Timers due in the same tick come out in no promised order.
 * - Handles carry a generation: a handle that fired, was cancelled or whose slot
 *   was reused cancels nothing and answers false.
 *
 * Memory. No GC runtime is linked (runtime "stub", nothing is allocated by
 * AssemblyScript): everything is placed by hand in linear memory.
 * - Each list (a slot, the ready list, the overflow list) is a vector of 8-byte
 *   entries, stored in a chain of 512-byte blocks (63 entries and a next/prev
 *   header) from one shared pool of blocks; every block but the last is full.
 *   An entry is the timer's index and, above it, what the timer's way out
 *   needs (entryHigh): at levels 2 to 5 the low 30 bits of its due tick (when
 *   a level-L slot is emptied its deadline supplies every higher bit); at level
 *   1 the 6 due bits that level needs and the timer's generation; at level 0
 *   and in the ready list the generation alone. So the cascade from level 1
 *   and the hand-out, which nearly every timer takes, only ever write the
 *   table, never wait to read it. Overflow entries take two words (index,
 *   full due tick). Emptying a slot walks its entries in memory order: the loads do
 *   not depend on one another, so the CPU overlaps their cache misses, where a
 *   linked list in random memory order paid one dependent miss per timer.
 * - A table, indexed by timer, holds one u64 per timer: its generation and the
 *   address of its entry (the entry's block names its list). Cancel swap-removes: the list's last
 *   entry moves into the hole and its timer's address is rewritten, so a list
 *   never has holes and an emptied block goes back to the pool. The ready list
 *   is the exception: it keeps schedule order, so a cancel there leaves a zero
 *   entry (a tombstone) that the next drain skips, and the list is compacted
 *   once tombstones outnumber its live entries.
 * - Free table entries form an intrusive FIFO list through their address field.
 *   The table lives in 64 KiB blocks found through a fixed directory, so it
 *   grows without moving.
 * - Linear memory grows by an eighth when the pool runs out, so a live timer
 *   costs 16 bytes (table and entry) plus at most an eighth, about 18 bytes.
 */
import {
  LEVELS,
  SLOT_BITS,
  SLOTS_PER_LEVEL,
  HORIZON_TICKS,
  READY,
  OVERFLOW,
  NO_TIMER,
  INDEX_BITS,
  GENERATION_MASK,
  DUE_LOW_MASK,
  BLOCK_ENTRIES,
  IO_CAPACITY,
  occupancyPtr,
  inputPtr,
  outputPtr,
  poolBase,
  entryAt,
} from "./layout";
import {
  header,
  headOf,
  tailOf,
  tailUsedOf,
  lengthOf,
  setList,
  setLength,
  clearList,
  nextBlock,
  listOfEntry,
  wordsPerEntry,
  blockWords,
  appendSlot,
  removeEntry,
  occupancy,
  setOccupancy,
} from "./lists";
import { freeBlock, ensureReserve, resetPool } from "./pool";
import { drainReady, leaveTombstone, resetReady } from "./ready";
import {
  tableSlot,
  generationOf,
  entryOf,
  handleOf,
  locate,
  allocateTimer,
  releaseTimer,
  touchTable,
  resetTable,
  liveTimers,
  everUsed,
} from "./table";

let elapsed: u64 = 0;
let overflowMin: u64 = U64.MAX_VALUE; // a lower bound: not raised when the minimum is cancelled

// Set by findNextSlot().
let nextLevel: u32 = 0;
let nextSlot: u32 = 0;
let nextDeadline: u64 = 0;

// ---- placement --------------------------------------------------------------

@inline function levelFor(due: u64): u32 {
  let masked = (elapsed ^ due) | 63;
  if (masked >= HORIZON_TICKS) masked = HORIZON_TICKS - 1;
  return <u32>((63 - clz<u64>(masked)) / SLOT_BITS);
}

/** Files live timer `i` (of `generation`) due at `due` into the ready list, the overflow list or its slot. */
@inline function place(i: u32, due: u64, generation: u32): void {
  if (due <= elapsed) {
    const entry = appendSlot(READY);
    store<u64>(entry, <u64>i | (<u64>generation << 32));
    locate(i, entry);
    return;
  }
  if (due - elapsed >= HORIZON_TICKS) {
    const entry = appendSlot(OVERFLOW);
    store<u64>(entry, <u64>i);
    store<u64>(entry, due, 8);
    locate(i, entry);
    if (due < overflowMin) overflowMin = due;
    return;
  }
  const level = levelFor(due);
  const slot = <u32>((due >> (<u64>level * SLOT_BITS)) & 63);
  const list = level * SLOTS_PER_LEVEL + slot;
  const entry = appendSlot(list);
  store<u64>(entry, <u64>i | (<u64>entryHigh(level, due, generation) << 32));
  locate(i, entry);
  setOccupancy(level, occupancy(level) | ((<u64>1) << slot));
}

/**
 * The high half of a level-L slot entry: what its timer's way out needs that the
 * table would otherwise be read for. Level 0 needs no due bits (the slot and the
 * position give the tick), so it keeps the generation, which the hand-out needs
 * for the handle; level 1 needs 6 due bits and keeps the generation above them.
 * Higher levels need up to 30 due bits, and read the generation from the table
 * when they cascade.
 */
@inline function entryHigh(level: u32, due: u64, generation: u32): u32 {
  if (level == 0) return generation;
  if (level == 1) return (<u32>due & 63) | (generation << 6);
  return <u32>(due & DUE_LOW_MASK);
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

/**
 * Re-files every entry of a list taken out whole (`head`): each goes to the
 * ready list, a lower level or (overflow only) back to the overflow list.
 * Blocks go back to the pool as they are emptied, so the lists they feed can
 * reuse them. `highBits` completes the due tick of a slot's entries.
 */
function refile(list: u32, head: usize, tail: usize, tailUsed: u32, highBits: u64): void {
  if (list >> 6 == 1) {
    refileLevelOne(head, tail, tailUsed);
    return;
  }
  const words = wordsPerEntry(list);
  let block = head;
  while (block != 0) {
    const used = block == tail ? tailUsed : blockWords(list);
    touchTable(block, 0, used, words);
    for (let k: u32 = 0; k < used; k += words) {
      const entry = entryAt(block, k);
      const word = load<u64>(entry);
      const i = <u32>word;
      const due = words == 2 ? load<u64>(entry, 8) : highBits | (word >> 32);
      place(i, due, generationOf(i));
    }
    const next = nextBlock(block);
    freeBlock(block);
    block = next;
  }
}

/**
 * refile() for a level-1 slot, the cascade nearly every timer takes on its way
 * out: its entries carry their generation, so the table is only written (each
 * timer's new address), never read, and each goes to level 0 or, when due at
 * the slot's own tick, the ready list.
 */
function refileLevelOne(head: usize, tail: usize, tailUsed: u32): void {
  let occupied: u64 = 0;
  let block = head;
  while (block != 0) {
    const used = block == tail ? tailUsed : BLOCK_ENTRIES;
    for (let k: u32 = 0; k < used; k++) {
      const word = load<u64>(entryAt(block, k));
      const i = <u32>word;
      const high = <u32>(word >> 32);
      const slot = high & 63; // `highBits` is the position, a multiple of 64: slot 0 is due now
      const entry = appendSlot(slot == 0 ? READY : slot);
      store<u64>(entry, <u64>i | (<u64>(high >> 6) << 32));
      locate(i, entry);
      occupied |= (<u64>1) << slot;
    }
    const next = nextBlock(block);
    freeBlock(block);
    block = next;
  }
  setOccupancy(0, occupancy(0) | (occupied & ~(<u64>1)));
}

/** Files every overflow timer now inside the horizon, and recomputes the exact minimum of the rest. */
function pullOverflow(): void {
  const h = header(OVERFLOW);
  const head = headOf(h);
  const tail = tailOf(h);
  const tailUsed = tailUsedOf(h);
  clearList(h);
  overflowMin = U64.MAX_VALUE;
  refile(OVERFLOW, head, tail, tailUsed, 0);
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

/**
 * Empties the slot found by findNextSlot(); `elapsed` is already its deadline,
 * and the ready list is empty (advance drained it). A level-0 slot's timers are
 * all due now: its chain becomes the ready list as it is, without touching the
 * timers. Their table words still name the slot, which is how cancel() tells
 * them apart (see inReadyByChain).
 */
function expireSlot(level: u32, slot: u32): void {
  const list = level * SLOTS_PER_LEVEL + slot;
  const h = header(list);
  const head = headOf(h);
  const tail = tailOf(h);
  const tailUsed = tailUsedOf(h);
  const length = lengthOf(h);
  clearList(h);
  setOccupancy(level, occupancy(level) & ~((<u64>1) << slot));
  if (level == 0) {
    const ready = header(READY);
    setList(ready, head, tail, tailUsed, 0);
    setLength(ready, length);
    return;
  }
  const slotMask: u64 = ((<u64>1) << (<u64>level * SLOT_BITS)) - 1;
  refile(list, head, tail, tailUsed, elapsed & ~slotMask);
}

/**
 * An entry in a block of level-0 slot `list` is in the ready list when that
 * slot's chain was handed over whole (expireSlot): the slot is then the
 * position's own (advance does not move on before the ready list is empty),
 * while a timer really in a level-0 slot is due 1 to 63 ticks after the
 * position, in a later slot. Timers made ready after the hand-over may share
 * the chain's tail block, so it is the block that tells, not the entry.
 */
@inline function inReadyByChain(list: u32): bool {
  return list < SLOTS_PER_LEVEL && list == <u32>(elapsed & 63);
}

// ---- exports ------------------------------------------------------------------

/** Resets the wheel with its position at `nowTick`. Call once before anything else. */
export function init(nowTick: f64): bool {
  if (!resetPool()) return false;
  memory.fill(occupancyPtr, 0, poolBase - occupancyPtr);
  elapsed = <u64>nowTick;
  resetReady();
  overflowMin = U64.MAX_VALUE;
  return resetTable() && ensureReserve();
}

/** Schedules a timer due at `dueTick` (a whole, non-negative number). Returns its handle, or -1 when memory is exhausted. */
export function schedule(dueTick: f64): f64 {
  const i = allocateTimer();
  if (i == NO_TIMER) return -1;
  const generation = (generationOf(i) + 1) & GENERATION_MASK; // now odd: live
  store<u32>(tableSlot(i), generation, 4);
  if (!ensureReserve()) {
    releaseTimer(i, generation);
    return -1;
  }
  place(i, <u64>dueTick, generation);
  return handleOf(i, generation);
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
  if (!everUsed(i)) return false;
  if ((generation & 1) == 0 || generationOf(i) != generation) return false;
  const entry = entryOf(i);
  const list = listOfEntry(entry);
  if (list == READY || inReadyByChain(list)) {
    leaveTombstone(entry);
  } else {
    removeEntry(list, entry);
  }
  releaseTimer(i, generation);
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
    if (headOf(header(OVERFLOW)) != 0) {
      const pullAt = overflowPullTick();
      // Strictly before the slot: landing on a slot's own tick without emptying
      // it would make it look like the position's slot, a whole round away.
      if (pullAt < slotAt && pullAt <= now) {
        if (pullAt > elapsed) elapsed = pullAt;
        pullOverflow();
        count = drainReady(count);
        if (count == IO_CAPACITY) return count;
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
  if (lengthOf(header(READY)) > 0) return <f64>elapsed;
  let at = findNextSlot() ? nextDeadline : U64.MAX_VALUE;
  if (headOf(header(OVERFLOW)) != 0 && overflowMin < at) at = overflowMin;
  return at == U64.MAX_VALUE ? -1 : <f64>at;
}

export function size(): u32 {
  return liveTimers();
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
