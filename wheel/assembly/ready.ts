/**
 * The ready list: timers already due, handed out in the order they became
 * ready. It keeps that order, so a cancel leaves a zero entry (a tombstone)
 * that the next drain skips instead of moving the list's last entry into the
 * hole, and the list is compacted once tombstones outnumber its live entries
 * by a block. Its entries carry their timer's generation (index.ts, entryHigh),
 * so a drain makes each handle without reading the table.
 */
import { READY, NO_TIMER, BLOCK_ENTRIES, IO_CAPACITY, outputPtr, entryAt } from "./layout";
import {
  header,
  headOf,
  tailOf,
  tailUsedOf,
  headConsumedOf,
  lengthOf,
  setLength,
  clearList,
  nextBlock,
  appendSlot,
} from "./lists";
import { freeBlock } from "./pool";
import { handleOf, locate, endTimer, linkFree, releaseRun } from "./table";

let readyTombstones: u32 = 0;

export function resetReady(): void {
  readyTombstones = 0;
}

/** Cancels the ready entry at `entry` (its timer is released by the caller). */
export function leaveTombstone(entry: usize): void {
  store<u64>(entry, 0);
  const h = header(READY);
  setLength(h, lengthOf(h) - 1);
  readyTombstones++;
  if (readyTombstones > lengthOf(h) + BLOCK_ENTRIES) compactReady();
}

/**
 * Hands out timers from the head of the ready list, skipping tombstones, and
 * frees the blocks it empties. Writes their handles to the output buffer from position `count`;
 * returns the new count.
 */
export function drainReady(count: u32): u32 {
  const h = header(READY);
  let block = headOf(h);
  if (block == 0) return count;
  const tail = tailOf(h);
  const start = count;
  let k = headConsumedOf(h);
  let tombstones: u32 = 0;
  let first: u32 = NO_TIMER; // the timers released here, linked in hand-out order
  let last: u32 = NO_TIMER;
  while (count < IO_CAPACITY) {
    const used = block == tail ? tailUsedOf(h) : BLOCK_ENTRIES;
    while (k < used && count < IO_CAPACITY) {
      const word = load<u64>(entryAt(block, k));
      k++;
      const i = <u32>word;
      if (i == NO_TIMER) {
        tombstones++;
        continue;
      }
      const generation = <u32>(word >> 32);
      store<f64>(outputPtr + (<usize>count << 3), handleOf(i, generation));
      endTimer(i, generation);
      if (last == NO_TIMER) first = i;
      else linkFree(last, i);
      last = i;
      count++;
    }
    if (k < used) break;
    const next = nextBlock(block);
    freeBlock(block);
    if (block == tail) {
      clearList(h);
      block = 0;
      break;
    }
    block = next; // its back link is stale; nothing walks the ready list backwards
    k = 0;
  }
  readyTombstones -= tombstones;
  releaseRun(first, last, count - start);
  if (block != 0) {
    store<u32>(h, <u32>block, 0);
    store<u32>(h, k, 12);
    setLength(h, lengthOf(h) - (count - start));
  }
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
      const word = load<u64>(entryAt(block, k));
      const i = <u32>word;
      if (i == NO_TIMER) continue;
      const entry = appendSlot(READY);
      store<u64>(entry, word);
      locate(i, entry);
    }
    const next = nextBlock(block);
    freeBlock(block); // read to the end first: appendSlot may take this block next
    block = next;
    k = 0;
  }
}
