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
 *   An entry is the timer's index and, above it, the low 30 bits of its due tick:
 *   when a level-L slot is emptied its deadline supplies every higher bit, so
 *   that is all a cascade needs. Overflow entries take two words (index, full
 *   due tick). Emptying a slot walks its entries in memory order: the loads do
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

const LEVELS: u32 = 6;
const SLOT_BITS: u64 = 6;
const SLOTS_PER_LEVEL: u32 = 64;
const HORIZON_TICKS: u64 = 1 << 36;
const SLOT_LISTS: u32 = LEVELS * SLOTS_PER_LEVEL;
const READY: u32 = SLOT_LISTS;
const OVERFLOW: u32 = SLOT_LISTS + 1;
const LIST_COUNT: u32 = SLOT_LISTS + 2;
const NO_TIMER: u32 = 0; // index 0 is never handed out: a zero entry is a tombstone
const FIRST_TIMER: u32 = 1;

// A handle is generation * 2^28 + index: 28 index bits (more timers than 4 GiB
// of memory can hold) leave 25 generation bits below 2^53. A stale handle could
// only match again after its index was reused 2^24 times, and the FIFO free
// list spreads reuse over every free index, so that takes billions of reuses.
const INDEX_BITS: u64 = 28;
const MAX_TIMERS: u32 = 1 << 28;
const GENERATION_MASK: u32 = (1 << 25) - 1;
const INDEX_SPAN: f64 = 268435456.0; // 2^28

// A table word: the entry's address in words (low half; 4 GiB / 8 fits) and the
// generation (high half). Each half is written on its own, without reading the
// other: a cascade only stores the new address, so the CPU never waits on it.
// The due tick's bits kept in an entry: a level-5 slot spans 2^30 ticks.
const DUE_LOW_MASK: u64 = (1 << 30) - 1;

// A block's first word links the chain: next block, then previous block with the
// list's number in its low bits (blocks are 512-byte aligned), which is how
// cancel() finds the list of an entry.
const BLOCK_BYTES: u32 = 512;
const BLOCK_ENTRIES: u32 = BLOCK_BYTES / 8 - 1;
const BLOCK_LIST_MASK: u32 = BLOCK_BYTES - 1;
const OVERFLOW_BLOCK_WORDS: u32 = BLOCK_ENTRIES - 1; // whole (index, due) pairs only
const TABLE_BLOCK_BITS: u32 = 13;
const TABLE_BLOCK_TIMERS: u32 = 1 << TABLE_BLOCK_BITS;
const TABLE_BLOCK_BYTES: u32 = TABLE_BLOCK_TIMERS * 8;
// Emptying a slot frees its blocks as it goes, but every list it feeds may
// start a new block on the way: blocks in use never exceed those at the last
// schedule by more than one partial block per list (and the ready list's head
// and the chain being emptied), so with this many to hand when a schedule
// returns, advance() never needs memory it could fail to get.
const RESERVE_BLOCKS: u32 = LIST_COUNT + 8;
const IO_CAPACITY: u32 = 4096;
const PAGE_BYTES: u64 = 65536;
const MAX_MEMORY_BYTES: u64 = 1 << 32;

// List header: head block, tail block, entries used in the tail block, entries
// consumed in the head block (the ready list only), live entries.
const LIST_HEADER_BYTES: u32 = 32;

// Fixed regions at the start of the heap, then the pool of blocks.
const occupancyPtr: usize = (__heap_base + 63) & ~(<usize>63);
const inputPtr: usize = occupancyPtr + <usize>LEVELS * 8;
const outputPtr: usize = inputPtr + <usize>IO_CAPACITY * 8;
const listsPtr: usize = outputPtr + <usize>IO_CAPACITY * 8;
const directoryPtr: usize = listsPtr + <usize>(LIST_COUNT * LIST_HEADER_BYTES);
const poolBase: usize =
  (directoryPtr + <usize>((MAX_TIMERS >> TABLE_BLOCK_BITS) * 4) + <usize>BLOCK_LIST_MASK) &
  ~(<usize>BLOCK_LIST_MASK);

let memoryEnd: u64 = 0;
let poolTop: usize = 0; // blocks above this have never been used
let freeBlockHead: usize = 0;
let freeBlockCount: u32 = 0;

let elapsed: u64 = 0;
let liveCount: u32 = 0;
let highWater: u32 = FIRST_TIMER;
let freeHead: u32 = NO_TIMER; // FIFO: released at the tail, reused from the head
let freeTail: u32 = NO_TIMER;
let readyTombstones: u32 = 0;
let overflowMin: u64 = U64.MAX_VALUE; // a lower bound: not raised when the minimum is cancelled

// Set by findNextSlot().
let nextLevel: u32 = 0;
let nextSlot: u32 = 0;
let nextDeadline: u64 = 0;

// ---- memory ---------------------------------------------------------------

/** Grows linear memory to hold `endPtr` bytes, by at least an eighth; 64-bit arithmetic, as 4 GiB does not fit a usize. */
function ensureBytes(endPtr: u64): bool {
  if (endPtr <= memoryEnd) return true;
  if (endPtr > MAX_MEMORY_BYTES) return false;
  const needed = <i32>((endPtr - memoryEnd + PAGE_BYTES - 1) / PAGE_BYTES);
  let pages = <i32>(<u64>memory.size() / 8);
  if (pages < needed) pages = needed;
  if (memory.grow(pages) < 0 && memory.grow(needed) < 0) return false;
  memoryEnd = <u64>memory.size() * PAGE_BYTES;
  return true;
}

function allocateBlock(): usize {
  if (freeBlockHead != 0) {
    const block = freeBlockHead;
    freeBlockHead = load<u32>(block);
    freeBlockCount--;
    return block;
  }
  if (!ensureBytes(<u64>poolTop + BLOCK_BYTES)) unreachable(); // the reserve rules this out
  const block = poolTop;
  poolTop += BLOCK_BYTES;
  return block;
}

function freeBlock(block: usize): void {
  store<u32>(block, <u32>freeBlockHead);
  freeBlockHead = block;
  freeBlockCount++;
}

/** Makes sure RESERVE_BLOCKS blocks are to hand (free or inside memory), growing memory if not. */
function ensureReserve(): bool {
  const spare = <u64>freeBlockCount + (memoryEnd - <u64>poolTop) / BLOCK_BYTES;
  if (spare >= <u64>RESERVE_BLOCKS) return true;
  return ensureBytes(<u64>poolTop + (<u64>RESERVE_BLOCKS - <u64>freeBlockCount) * BLOCK_BYTES);
}

// ---- the timer table ------------------------------------------------------------

@inline function tableSlot(i: u32): usize {
  return <usize>load<u32>(directoryPtr + (<usize>(i >> TABLE_BLOCK_BITS) << 2)) +
    (<usize>(i & (TABLE_BLOCK_TIMERS - 1)) << 3);
}
@inline function generationOf(i: u32): u32 {
  return load<u32>(tableSlot(i), 4);
}
@inline function entryOf(i: u32): usize {
  return <usize>load<u32>(tableSlot(i)) << 3;
}
@inline function handleOf(i: u32, generation: u32): f64 {
  return <f64>generation * INDEX_SPAN + <f64>i;
}
/** Records where timer `i` (live) now is. */
@inline function locate(i: u32, entry: usize): void {
  store<u32>(tableSlot(i), <u32>(entry >> 3));
}

/** A free index with its generation made odd (live); NO_TIMER when memory is exhausted. */
function allocateTimer(): u32 {
  let i = freeHead;
  if (i != NO_TIMER) {
    freeHead = load<u32>(tableSlot(i)); // a free word's low half links the free list
    if (freeHead == NO_TIMER) freeTail = NO_TIMER;
  } else {
    if (highWater == MAX_TIMERS) return NO_TIMER;
    if ((highWater & (TABLE_BLOCK_TIMERS - 1)) == 0 && !addTableBlock(highWater)) return NO_TIMER;
    i = highWater++;
  }
  liveCount++;
  return i;
}

/** Table blocks come from the top of the pool and are never freed: the table only grows. */
function addTableBlock(first: u32): bool {
  if (!ensureBytes(<u64>poolTop + TABLE_BLOCK_BYTES)) return false;
  memory.fill(poolTop, 0, TABLE_BLOCK_BYTES);
  store<u32>(directoryPtr + (<usize>(first >> TABLE_BLOCK_BITS) << 2), <u32>poolTop);
  poolTop += TABLE_BLOCK_BYTES;
  return true;
}

/** Ends timer `i`: its generation goes even (free) and it joins the tail of the free list. */
function releaseTimer(i: u32, generation: u32): void {
  store<u64>(tableSlot(i), (<u64>((generation + 1) & GENERATION_MASK)) << 32);
  // A plain store, not read-modify-write: reading the last released word would
  // make each release wait for the previous one's cache miss.
  if (freeTail == NO_TIMER) freeHead = i;
  else store<u32>(tableSlot(freeTail), i);
  freeTail = i;
  liveCount--;
}

/**
 * Reads the table words of a block's entries before they are worked on. The
 * loads are independent, so their cache misses overlap (wasm has no prefetch
 * instruction); the work that follows then finds the words in cache. The sum
 * only keeps the loads from being dropped.
 */
let touchedSum: u32 = 0;
@inline function touchTable(block: usize, from: u32, used: u32, words: u32): void {
  let sum: u32 = 0;
  for (let k = from; k < used; k += words) {
    sum += load<u32>(tableSlot(<u32>load<u64>(entryAt(block, k))), 4);
  }
  touchedSum += sum;
}

// ---- lists ----------------------------------------------------------------------

@inline function header(list: u32): usize {
  return listsPtr + <usize>(list * LIST_HEADER_BYTES);
}
@inline function headOf(h: usize): usize {
  return <usize>load<u32>(h, 0);
}
@inline function tailOf(h: usize): usize {
  return <usize>load<u32>(h, 4);
}
@inline function tailUsedOf(h: usize): u32 {
  return load<u32>(h, 8);
}
@inline function headConsumedOf(h: usize): u32 {
  return load<u32>(h, 12);
}
@inline function lengthOf(h: usize): u32 {
  return load<u32>(h, 16);
}
@inline function setList(h: usize, head: usize, tail: usize, tailUsed: u32, consumed: u32): void {
  store<u32>(h, <u32>head, 0);
  store<u32>(h, <u32>tail, 4);
  store<u32>(h, tailUsed, 8);
  store<u32>(h, consumed, 12);
}
@inline function setLength(h: usize, length: u32): void {
  store<u32>(h, length, 16);
}
@inline function clearList(h: usize): void {
  setList(h, 0, 0, 0, 0);
  setLength(h, 0);
}
@inline function nextBlock(block: usize): usize {
  return <usize>load<u32>(block, 0);
}
@inline function prevBlock(block: usize): usize {
  return <usize>(load<u32>(block, 4) & ~BLOCK_LIST_MASK);
}
@inline function listOfEntry(entry: usize): u32 {
  return load<u32>(entry & ~(<usize>BLOCK_LIST_MASK), 4) & BLOCK_LIST_MASK;
}
@inline function entryAt(block: usize, k: u32): usize {
  return block + 8 + (<usize>k << 3);
}
@inline function wordsPerEntry(list: u32): u32 {
  return list == OVERFLOW ? 2 : 1;
}
@inline function blockWords(list: u32): u32 {
  return list == OVERFLOW ? OVERFLOW_BLOCK_WORDS : BLOCK_ENTRIES;
}

/** Appends a slot for one entry to `list` and returns its address (the reserve guarantees a block). */
@inline function appendSlot(list: u32): usize {
  const h = header(list);
  const tail = tailOf(h);
  const used = tailUsedOf(h);
  const words = wordsPerEntry(list);
  if (tail == 0 || used + words > blockWords(list)) return appendBlock(list);
  store<u32>(h, used + words, 8);
  setLength(h, lengthOf(h) + 1);
  return entryAt(tail, used);
}

/** appendSlot's slow path: the entry starts a new tail block. */
function appendBlock(list: u32): usize {
  const h = header(list);
  const tail = tailOf(h);
  const block = allocateBlock();
  store<u32>(block, 0, 0);
  store<u32>(block, <u32>tail | list, 4);
  if (tail == 0) store<u32>(h, <u32>block, 0);
  else store<u32>(tail, <u32>block, 0);
  store<u32>(h, <u32>block, 4);
  store<u32>(h, wordsPerEntry(list), 8);
  setLength(h, lengthOf(h) + 1);
  return entryAt(block, 0);
}

/** Swap-remove: the list's last entry fills the hole at `entry`; an emptied tail block goes back to the pool. */
function removeEntry(list: u32, entry: usize): void {
  const h = header(list);
  let tail = tailOf(h);
  const words = wordsPerEntry(list);
  let used = tailUsedOf(h) - words;
  const last = entryAt(tail, used);
  if (last != entry) {
    const word = load<u64>(last);
    store<u64>(entry, word);
    if (words == 2) store<u64>(entry, load<u64>(last, 8), 8);
    locate(<u32>word, entry);
  }
  if (used == 0) {
    const previous = prevBlock(tail);
    freeBlock(tail);
    if (previous == 0) {
      clearList(h);
      if (list < SLOT_LISTS) clearOccupied(list);
      return;
    }
    store<u32>(previous, 0, 0);
    tail = previous;
    used = blockWords(list);
  }
  store<u32>(h, <u32>tail, 4);
  store<u32>(h, used, 8);
  setLength(h, lengthOf(h) - 1);
}

function clearOccupied(list: u32): void {
  const level = list >> 6;
  setOccupancy(level, occupancy(level) & ~((<u64>1) << (list & 63)));
}
@inline function occupancy(level: u32): u64 {
  return load<u64>(occupancyPtr + (<usize>level << 3));
}
@inline function setOccupancy(level: u32, bits: u64): void {
  store<u64>(occupancyPtr + (<usize>level << 3), bits);
}

// ---- placement --------------------------------------------------------------

@inline function levelFor(due: u64): u32 {
  let masked = (elapsed ^ due) | 63;
  if (masked >= HORIZON_TICKS) masked = HORIZON_TICKS - 1;
  return <u32>((63 - clz<u64>(masked)) / SLOT_BITS);
}

/** Files live timer `i` due at `due` into the ready list, the overflow list or its slot. */
@inline function place(i: u32, due: u64): void {
  if (due <= elapsed) {
    const entry = appendSlot(READY);
    store<u64>(entry, <u64>i);
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
  store<u64>(entry, <u64>i | ((due & DUE_LOW_MASK) << 32));
  locate(i, entry);
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

/**
 * Re-files every entry of a list taken out whole (`head`): each goes to the
 * ready list, a lower level or (overflow only) back to the overflow list.
 * Blocks go back to the pool as they are emptied, so the lists they feed can
 * reuse them. `highBits` completes the due tick of a slot's entries.
 */
function refile(list: u32, head: usize, tail: usize, tailUsed: u32, highBits: u64): void {
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
      place(i, due);
    }
    const next = nextBlock(block);
    freeBlock(block);
    block = next;
  }
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
 * A timer whose table word names level-0 slot `list` is in the ready list when
 * that slot's chain was handed over whole (expireSlot). Then the position is
 * still its due tick (advance does not move on before the ready list is empty),
 * while a timer really in a level-0 slot is due 1 to 63 ticks after it.
 */
@inline function inReadyByChain(list: u32, entry: usize): bool {
  return list < SLOTS_PER_LEVEL && (load<u64>(entry) >> 32) == (elapsed & DUE_LOW_MASK);
}

/** Hands out timers from the head of the ready list, skipping tombstones; frees the blocks it empties. */
function drainReady(count: u32): u32 {
  const h = header(READY);
  let block = headOf(h);
  if (block == 0) return count;
  const tail = tailOf(h);
  let k = headConsumedOf(h);
  let length = lengthOf(h);
  while (count < IO_CAPACITY) {
    const used = block == tail ? tailUsedOf(h) : BLOCK_ENTRIES;
    touchTable(block, k, used, 1);
    while (k < used && count < IO_CAPACITY) {
      const i = <u32>load<u64>(entryAt(block, k));
      k++;
      if (i == NO_TIMER) {
        readyTombstones--;
        continue;
      }
      const generation = generationOf(i);
      store<f64>(outputPtr + (<usize>count << 3), handleOf(i, generation));
      releaseTimer(i, generation);
      length--;
      count++;
    }
    if (k < used) break;
    const next = nextBlock(block);
    freeBlock(block);
    if (block == tail) {
      clearList(h);
      return count;
    }
    block = next; // its back link is stale; nothing walks the ready list backwards
    k = 0;
  }
  store<u32>(h, <u32>block, 0);
  store<u32>(h, k, 12);
  setLength(h, length);
  return count;
}

/** Rewrites the ready list without its tombstones, in the same order. */
function compactReady(): void {
  const h = header(READY);
  let block = headOf(h);
  const tail = tailOf(h);
  const tailUsed = tailUsedOf(h);
  let k = headConsumedOf(h);
  clearList(h);
  readyTombstones = 0;
  while (block != 0) {
    const used = block == tail ? tailUsed : BLOCK_ENTRIES;
    for (; k < used; k++) {
      const i = <u32>load<u64>(entryAt(block, k));
      if (i == NO_TIMER) continue;
      const entry = appendSlot(READY);
      store<u64>(entry, <u64>i);
      locate(i, entry);
    }
    const next = nextBlock(block);
    freeBlock(block); // read to the end first: appendSlot may take this block next
    block = next;
    k = 0;
  }
}

// ---- exports ------------------------------------------------------------------

/** Resets the wheel with its position at `nowTick`. Call once before anything else. */
export function init(nowTick: f64): bool {
  memoryEnd = <u64>memory.size() * PAGE_BYTES;
  if (!ensureBytes(<u64>poolBase)) return false;
  memory.fill(occupancyPtr, 0, poolBase - occupancyPtr);
  poolTop = poolBase;
  freeBlockHead = 0;
  freeBlockCount = 0;
  elapsed = <u64>nowTick;
  liveCount = 0;
  highWater = FIRST_TIMER;
  freeHead = NO_TIMER;
  freeTail = NO_TIMER;
  readyTombstones = 0;
  overflowMin = U64.MAX_VALUE;
  return addTableBlock(0) && ensureReserve();
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
  place(i, <u64>dueTick);
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
  if (i < FIRST_TIMER || i >= highWater) return false;
  if ((generation & 1) == 0 || generationOf(i) != generation) return false;
  const entry = entryOf(i);
  const list = listOfEntry(entry);
  if (list == READY || inReadyByChain(list, entry)) {
    // The ready list keeps schedule order: leave a tombstone instead of moving its last entry.
    store<u64>(entry, 0);
    const h = header(READY);
    setLength(h, lengthOf(h) - 1);
    readyTombstones++;
    if (readyTombstones > lengthOf(h) + BLOCK_ENTRIES) compactReady();
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
