/**
 * Lists of timer entries (the 384 slots, the ready list, the overflow list):
 * each a chain of blocks from the pool with a 32-byte header, and the levels'
 * occupancy bitmaps. Removal swaps the list's last entry into the hole.
 */
import {
  SLOT_LISTS,
  OVERFLOW,
  BLOCK_ENTRIES,
  BLOCK_LIST_MASK,
  OVERFLOW_BLOCK_WORDS,
  LIST_HEADER_BYTES,
  occupancyPtr,
  listsPtr,
  entryAt,
} from "./layout";
import { allocateBlock, freeBlock } from "./pool";
import { locate } from "./table";

@inline export function header(list: u32): usize {
  return listsPtr + <usize>(list * LIST_HEADER_BYTES);
}
@inline export function headOf(h: usize): usize {
  return <usize>load<u32>(h, 0);
}
@inline export function tailOf(h: usize): usize {
  return <usize>load<u32>(h, 4);
}
@inline export function tailUsedOf(h: usize): u32 {
  return load<u32>(h, 8);
}
@inline export function headConsumedOf(h: usize): u32 {
  return load<u32>(h, 12);
}
@inline export function lengthOf(h: usize): u32 {
  return load<u32>(h, 16);
}
@inline export function setList(h: usize, head: usize, tail: usize, tailUsed: u32, consumed: u32): void {
  store<u32>(h, <u32>head, 0);
  store<u32>(h, <u32>tail, 4);
  store<u32>(h, tailUsed, 8);
  store<u32>(h, consumed, 12);
}
@inline export function setLength(h: usize, length: u32): void {
  store<u32>(h, length, 16);
}
@inline export function clearList(h: usize): void {
  setList(h, 0, 0, 0, 0);
  setLength(h, 0);
}
@inline export function nextBlock(block: usize): usize {
  return <usize>load<u32>(block, 0);
}
@inline export function prevBlock(block: usize): usize {
  return <usize>(load<u32>(block, 4) & ~BLOCK_LIST_MASK);
}
@inline export function listOfEntry(entry: usize): u32 {
  return load<u32>(entry & ~(<usize>BLOCK_LIST_MASK), 4) & BLOCK_LIST_MASK;
}
@inline export function wordsPerEntry(list: u32): u32 {
  return list == OVERFLOW ? 2 : 1;
}
@inline export function blockWords(list: u32): u32 {
  return list == OVERFLOW ? OVERFLOW_BLOCK_WORDS : BLOCK_ENTRIES;
}

/** Appends a slot for one entry to `list` and returns its address (the reserve guarantees a block). */
@inline export function appendSlot(list: u32): usize {
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
export function appendBlock(list: u32): usize {
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
export function removeEntry(list: u32, entry: usize): void {
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

export function clearOccupied(list: u32): void {
  const level = list >> 6;
  setOccupancy(level, occupancy(level) & ~((<u64>1) << (list & 63)));
}
@inline export function occupancy(level: u32): u64 {
  return load<u64>(occupancyPtr + (<usize>level << 3));
}
@inline export function setOccupancy(level: u32, bits: u64): void {
  store<u64>(occupancyPtr + (<usize>level << 3), bits);
}
