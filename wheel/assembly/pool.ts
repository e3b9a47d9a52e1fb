/**
 * Linear memory and the pool of 512-byte blocks that hold every list. Memory
 * grows by an eighth at a time and never shrinks; a block freed by a list goes
 * on a free list and is the next one handed out.
 */
import { BLOCK_BYTES, RESERVE_BLOCKS, PAGE_BYTES, MAX_MEMORY_BYTES, poolBase } from "./layout";

let memoryEnd: u64 = 0;
let poolTop: usize = 0; // blocks above this have never been used
let freeBlockHead: usize = 0;
let freeBlockCount: u32 = 0;

/** Forgets every block: the pool starts empty at `poolBase`, in memory as it is now. */
export function resetPool(): bool {
  memoryEnd = <u64>memory.size() * PAGE_BYTES;
  if (!ensureBytes(<u64>poolBase)) return false;
  poolTop = poolBase;
  freeBlockHead = 0;
  freeBlockCount = 0;
  return true;
}

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

export function allocateBlock(): usize {
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

export function freeBlock(block: usize): void {
  store<u32>(block, <u32>freeBlockHead);
  freeBlockHead = block;
  freeBlockCount++;
}

/** Makes sure RESERVE_BLOCKS blocks are to hand (free or inside memory), growing memory if not. */
export function ensureReserve(): bool {
  const spare = <u64>freeBlockCount + (memoryEnd - <u64>poolTop) / BLOCK_BYTES;
  if (spare >= <u64>RESERVE_BLOCKS) return true;
  return ensureBytes(<u64>poolTop + (<u64>RESERVE_BLOCKS - <u64>freeBlockCount) * BLOCK_BYTES);
}

/** Takes `bytes` for good from the top of the pool, zeroed; 0 when memory is exhausted. */
export function claimTop(bytes: u32): usize {
  if (!ensureBytes(<u64>poolTop + bytes)) return 0;
  const at = poolTop;
  memory.fill(at, 0, bytes);
  poolTop += bytes;
  return at;
}
