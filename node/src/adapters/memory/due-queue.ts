/**
 * One shard's `due` set in memory: what a Redis sorted set of task ids
 * scored by run_at gives the hot tier (adapters/redis/scripts/*.lua), with
 * the same order — by run_at, then by id — and the same idempotent add (a
 * second add of an id moves it to its new run_at).
 *
 * A map id → run_at is the truth; a binary min-heap of (run_at, id) pairs
 * answers "the earliest ones" in O(log n). Removing or moving an id leaves
 * its old pair in the heap, skipped when it surfaces (its run_at no longer
 * matches the map); the heap is rebuilt from the map when such stale pairs
 * outnumber the live ones, so memory stays within a constant factor.
 */

interface Pair {
  runAtMs: number;
  id: string;
}

const before = (a: Pair, b: Pair): boolean =>
  a.runAtMs < b.runAtMs || (a.runAtMs === b.runAtMs && a.id < b.id);

/** Below this many pairs a rebuild is not worth it. */
const MIN_REBUILD_PAIRS = 1024;

export class DueQueue {
  private readonly runAtOf = new Map<string, number>();
  private heap: Pair[] = [];

  get size(): number {
    return this.runAtOf.size;
  }

  has(id: string): boolean {
    return this.runAtOf.has(id);
  }

  /** ZADD: adds the id, or moves it to `runAtMs`. */
  add(id: string, runAtMs: number): void {
    if (this.runAtOf.get(id) === runAtMs) return;
    this.runAtOf.set(id, runAtMs);
    this.push({ runAtMs, id });
    if (this.heap.length > MIN_REBUILD_PAIRS && this.heap.length > 2 * this.runAtOf.size) {
      this.rebuild();
    }
  }

  /** ZREM: true if the id was there. */
  remove(id: string): boolean {
    return this.runAtOf.delete(id);
  }

  /** Removes and returns up to `limit` ids due at or before `upToMs`, earliest first. */
  takeDue(upToMs: number, limit: number): Pair[] {
    const taken: Pair[] = [];
    while (taken.length < limit && this.heap.length > 0) {
      const top = this.heap[0]!;
      if (this.runAtOf.get(top.id) !== top.runAtMs) {
        this.pop(); // stale: removed or moved since
        continue;
      }
      if (top.runAtMs > upToMs) break;
      this.pop();
      this.runAtOf.delete(top.id);
      taken.push(top);
    }
    return taken;
  }

  private rebuild(): void {
    this.heap = [...this.runAtOf].map(([id, runAtMs]) => ({ runAtMs, id }));
    for (let i = (this.heap.length >> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  private push(pair: Pair): void {
    const heap = this.heap;
    heap.push(pair);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop()!;
    if (heap.length === 0) return;
    heap[0] = last;
    this.siftDown(0);
  }

  private siftDown(start: number): void {
    const heap = this.heap;
    let i = start;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < heap.length && before(heap[left]!, heap[least]!)) least = left;
      if (right < heap.length && before(heap[right]!, heap[least]!)) least = right;
      if (least === i) return;
      [heap[i], heap[least]] = [heap[least]!, heap[i]!];
      i = least;
    }
  }
}
