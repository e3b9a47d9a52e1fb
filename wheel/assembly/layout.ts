/**
 * The wheel's constants and the fixed regions at the start of its linear
 * memory. Everything else is placed by hand from the pool of blocks above
 * them (pool.ts). The layout is explained in index.ts.
 */

export const LEVELS: u32 = 6;
export const SLOT_BITS: u64 = 6;
export const SLOTS_PER_LEVEL: u32 = 64;
export const HORIZON_TICKS: u64 = 1 << 36;
export const SLOT_LISTS: u32 = LEVELS * SLOTS_PER_LEVEL;
export const READY: u32 = SLOT_LISTS;
export const OVERFLOW: u32 = SLOT_LISTS + 1;
export const LIST_COUNT: u32 = SLOT_LISTS + 2;
export const NO_TIMER: u32 = 0; // index 0 is never handed out: a zero entry is a tombstone
export const FIRST_TIMER: u32 = 1;

// A handle is generation * 2^28 + index: 28 index bits (more timers than 4 GiB
// of memory can hold) leave 25 generation bits below 2^53. A stale handle could
// only match again after its index was reused 2^24 times, and the FIFO free
// list spreads reuse over every free index, so that takes billions of reuses.
export const INDEX_BITS: u64 = 28;
export const MAX_TIMERS: u32 = 1 << 28;
export const GENERATION_MASK: u32 = (1 << 25) - 1;
export const INDEX_SPAN: f64 = 268435456.0; // 2^28

// A table word: the entry's address in words (low half; 4 GiB / 8 fits) and the
// generation (high half). Each half is written on its own, without reading the
// other: a cascade only stores the new address, so the CPU never waits on it.
// The due tick's bits kept in an entry: a level-5 slot spans 2^30 ticks.
export const DUE_LOW_MASK: u64 = (1 << 30) - 1;

// A block's first word links the chain: next block, then previous block with the
// list's number in its low bits (blocks are 512-byte aligned), which is how
// cancel() finds the list of an entry.
export const BLOCK_BYTES: u32 = 512;
export const BLOCK_ENTRIES: u32 = BLOCK_BYTES / 8 - 1;
export const BLOCK_LIST_MASK: u32 = BLOCK_BYTES - 1;
export const OVERFLOW_BLOCK_WORDS: u32 = BLOCK_ENTRIES - 1; // whole (index, due) pairs only
export const TABLE_BLOCK_BITS: u32 = 13;
export const TABLE_BLOCK_TIMERS: u32 = 1 << TABLE_BLOCK_BITS;
export const TABLE_BLOCK_BYTES: u32 = TABLE_BLOCK_TIMERS * 8;
// Emptying a slot frees its blocks as it goes, but every list it feeds may
// start a new block on the way: blocks in use never exceed those at the last
// schedule by more than one partial block per list (and the ready list's head
// and the chain being emptied), so with this many to hand when a schedule
// returns, advance() never needs memory it could fail to get.
export const RESERVE_BLOCKS: u32 = LIST_COUNT + 8;
export const IO_CAPACITY: u32 = 4096;
export const PAGE_BYTES: u64 = 65536;
export const MAX_MEMORY_BYTES: u64 = 1 << 32;

// List header: head block, tail block, entries used in the tail block, entries
// consumed in the head block (the ready list only), live entries.
export const LIST_HEADER_BYTES: u32 = 32;

// Fixed regions at the start of the heap, then the pool of blocks.
export const occupancyPtr: usize = (__heap_base + 63) & ~(<usize>63);
export const inputPtr: usize = occupancyPtr + <usize>LEVELS * 8;
export const outputPtr: usize = inputPtr + <usize>IO_CAPACITY * 8;
export const listsPtr: usize = outputPtr + <usize>IO_CAPACITY * 8;
export const directoryPtr: usize = listsPtr + <usize>(LIST_COUNT * LIST_HEADER_BYTES);
export const poolBase: usize =
  (directoryPtr + <usize>((MAX_TIMERS >> TABLE_BLOCK_BITS) * 4) + <usize>BLOCK_LIST_MASK) &
  ~(<usize>BLOCK_LIST_MASK);

/** The address of a block's `k`-th entry word (the first word is the block's links). */
@inline export function entryAt(block: usize, k: u32): usize {
  return block + 8 + (<usize>k << 3);
}
