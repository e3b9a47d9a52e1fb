/**
 * The pre-loader: for each shard whose `preload` lease this process holds,
 * copies SCHEDULED tasks due inside the hot window from Postgres into the
 * shard's due set. ZADD is idempotent, so running it again (or beside the
 * API's own adds) is always safe. It sweeps the whole window each time,
 * keyset-paginated; tasks are filtered to owned shards here, in Node (the
 * shard is a hash of tenant and id that Postgres does not store).
 */
import { shardOf } from "../domain/shard.js";
import type { Clock } from "../ports/clock.js";
import type { DispatchHotTier } from "../ports/dispatch-hot-tier.js";
import type { DispatchMetrics } from "../ports/dispatch-metrics.js";
import type { DispatchStore, ScheduledEntry } from "../ports/dispatch-store.js";

export interface PreloaderOptions {
  hotWindowMs: number;
  pageSize: number;
}

export class Preloader {
  constructor(
    private readonly store: DispatchStore,
    private readonly hotTier: DispatchHotTier,
    private readonly clock: Clock,
    private readonly metrics: DispatchMetrics,
    private readonly ownedShards: () => ReadonlySet<number>,
    private readonly options: PreloaderOptions,
  ) {}

  /** One sweep; returns how many entries it (re-)added. */
  async sweep(): Promise<number> {
    if (this.ownedShards().size === 0) return 0;
    const beforeMs = this.clock.nowMs() + this.options.hotWindowMs;
    let after: ScheduledEntry | null = null;
    let total = 0;
    for (;;) {
      const page = await this.store.scheduledBefore(beforeMs, after, this.options.pageSize);
      const owned = this.ownedShards();
      const mine = page.filter((e) => owned.has(shardOf(e.tenantId, e.taskId)));
      await this.hotTier.addDue(mine);
      total += mine.length;
      if (page.length < this.options.pageSize) break;
      after = page[page.length - 1]!;
    }
    this.metrics.preloaded(total);
    return total;
  }
}
