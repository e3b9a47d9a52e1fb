/**
 * The timer table: one u64 per timer, its generation and the address of its
 * entry in a list, in 64 KiB blocks found through a fixed directory so the
 * table grows without moving. Free indices form a FIFO list through their
 * address halves.
 */
import {
  NO_TIMER,
  FIRST_TIMER,
  MAX_TIMERS,
  GENERATION_MASK,
  INDEX_SPAN,
  TABLE_BLOCK_BITS,
  TABLE_BLOCK_TIMERS,
  TABLE_BLOCK_BYTES,
  directoryPtr,
  entryAt,
} from "./layout";
import { claimTop } from "./pool";

let liveCount: u32 = 0;
let highWater: u32 = FIRST_TIMER; // indices at and above this have never been used
let freeHead: u32 = NO_TIMER; // FIFO: released at the tail, reused from the head
let freeTail: u32 = NO_TIMER;

/** Empties the table and gives it its first block; false when memory is exhausted. */
export function resetTable(): bool {
  liveCount = 0;
  highWater = FIRST_TIMER;
  freeHead = NO_TIMER;
  freeTail = NO_TIMER;
  return addTableBlock(0);
}

export function liveTimers(): u32 {
  return liveCount;
}

/** Whether index `i` has ever been handed out. */
@inline export function everUsed(i: u32): bool {
  return i >= FIRST_TIMER && i < highWater;
}

@inline export function tableSlot(i: u32): usize {
  return <usize>load<u32>(directoryPtr + (<usize>(i >> TABLE_BLOCK_BITS) << 2)) +
    (<usize>(i & (TABLE_BLOCK_TIMERS - 1)) << 3);
}
@inline export function generationOf(i: u32): u32 {
  return load<u32>(tableSlot(i), 4);
}
@inline export function entryOf(i: u32): usize {
  return <usize>load<u32>(tableSlot(i)) << 3;
}
@inline export function handleOf(i: u32, generation: u32): f64 {
  return <f64>generation * INDEX_SPAN + <f64>i;
}
/** Records where timer `i` (live) now is. */
@inline export function locate(i: u32, entry: usize): void {
  store<u32>(tableSlot(i), <u32>(entry >> 3));
}

/** A free index with its generation made odd (live); NO_TIMER when memory is exhausted. */
export function allocateTimer(): u32 {
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
  const block = claimTop(TABLE_BLOCK_BYTES);
  if (block == 0) return false;
  store<u32>(directoryPtr + (<usize>(first >> TABLE_BLOCK_BITS) << 2), <u32>block);
  return true;
}

/** Ends timer `i`: its generation goes even (free) and it joins the tail of the free list. */
export function releaseTimer(i: u32, generation: u32): void {
  endTimer(i, generation);
  releaseRun(i, i, 1);
}

/**
 * Makes timer `i`'s generation even (free). A plain store, not
 * read-modify-write, so ending a timer never waits for its table word to
 * arrive; the word's low half, its free-list link, is left empty.
 */
@inline export function endTimer(i: u32, generation: u32): void {
  store<u64>(tableSlot(i), (<u64>((generation + 1) & GENERATION_MASK)) << 32);
}

/** Links ended timer `next` after ended timer `i`: a run of them joins the free list at once (releaseRun). */
@inline export function linkFree(i: u32, next: u32): void {
  store<u32>(tableSlot(i), next);
}

/** Appends a linked run of `count` ended timers, `first` to `last`, to the tail of the free list (FIFO). */
@inline export function releaseRun(first: u32, last: u32, count: u32): void {
  if (count == 0) return;
  if (freeTail == NO_TIMER) freeHead = first;
  else linkFree(freeTail, first);
  freeTail = last;
  liveCount -= count;
}

/**
 * Reads the table words of a block's entries before they are worked on. The
 * loads are independent, so their cache misses overlap (wasm has no prefetch
 * instruction); the work that follows then finds the words in cache. The sum
 * only keeps the loads from being dropped.
 */
let touchedSum: u32 = 0;
@inline export function touchTable(block: usize, from: u32, used: u32, words: u32): void {
  let sum: u32 = 0;
  for (let k = from; k < used; k += words) {
    sum += load<u32>(tableSlot(<u32>load<u64>(entryAt(block, k))), 4);
  }
  touchedSum += sum;
}
