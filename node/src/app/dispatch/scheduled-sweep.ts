/**
 * Pages through the SCHEDULED tasks of some shards that are due before a
 * bound: one statement per page for all the shards (the pre-loader's and the
 * reconciler's sweeps). Each shard starts at its own cursor (null: from the
 * start), keeps its own keyset cursor and leaves the sweep once a page
 * brings fewer than its limit.
 */
import type { DispatchStore, ScheduledEntry, ShardCursor } from "../../ports/dispatch-store.js";

/** Hands each page to `onPage` (which returns what it counted); returns the sum. */
export async function sweepScheduled(
  store: DispatchStore,
  beforeMs: number,
  start: readonly ShardCursor[],
  pageSize: number,
  onPage: (page: ScheduledEntry[]) => Promise<number>,
): Promise<number> {
  let cursors: ShardCursor[] = [...start];
  let total = 0;
  while (cursors.length > 0) {
    const limitPerShard = Math.max(1, Math.ceil(pageSize / cursors.length));
    const page = await store.scheduledBefore(beforeMs, cursors, limitPerShard);
    total += await onPage(page);
    cursors = unfinished(cursors, page, limitPerShard);
  }
  return total;
}

/** Cursors that sweep these shards from their first task. */
export const fromStart = (shards: Iterable<number>): ShardCursor[] =>
  [...shards].map((shard) => ({ shard, after: null }));

/** The shards whose page was full, each resuming after the last entry it brought. */
function unfinished(
  cursors: readonly ShardCursor[],
  page: readonly ScheduledEntry[],
  limitPerShard: number,
): ShardCursor[] {
  const last = new Map<number, ScheduledEntry>();
  const count = new Map<number, number>();
  for (const entry of page) {
    count.set(entry.shard, (count.get(entry.shard) ?? 0) + 1);
    const seen = last.get(entry.shard);
    if (seen === undefined || isAfter(entry, seen)) last.set(entry.shard, entry);
  }
  return cursors
    .filter((c) => (count.get(c.shard) ?? 0) >= limitPerShard)
    .map((c) => ({ shard: c.shard, after: last.get(c.shard)! }));
}

// Canonical (lowercase) uuid text sorts as the uuid does: the (run_at, id) order of the sweep.
const isAfter = (a: ScheduledEntry, b: ScheduledEntry): boolean =>
  a.runAtMs > b.runAtMs || (a.runAtMs === b.runAtMs && a.taskId > b.taskId);
