/**
 * The pre-loader: for each shard whose `preload` lease this process holds,
 * copies SCHEDULED tasks due inside the hot window from Postgres into the
 * shard's due set. ZADD is idempotent, so running it again (or beside the
 * API's own adds) is always safe. Each sweep reads the whole window of the
 * owned shards only, keyset-paginated per shard: Postgres filters by the
 * stored shard (tasks.hot_shard), through an index that leads with it. The
 * shards are those owned when the sweep starts; adding to a shard lost
 * meanwhile is as harmless as the API's own adds to any shard.
 */
import type { Clock } from "../../ports/clock.js";
import type { DispatchHotTier } from "../../ports/dispatch-hot-tier.js";
import type { DispatchMetrics } from "../../ports/dispatch-metrics.js";
import type { DispatchStore } from "../../ports/dispatch-store.js";
import { sweepScheduled } from "./scheduled-sweep.js";

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
    const shards = this.ownedShards();
    if (shards.size === 0) return 0;
    const beforeMs = this.clock.nowMs() + this.options.hotWindowMs;
    const total = await sweepScheduled(
      this.store,
      beforeMs,
      shards,
      this.options.pageSize,
      async (page) => {
        await this.hotTier.addDue(page);
        return page.length;
      },
    );
    this.metrics.preloaded(total);
    return total;
  }
}
