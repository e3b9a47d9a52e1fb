/**
 * The pre-loader: for each shard whose `preload` lease this process holds,
 * copies SCHEDULED tasks due inside the hot window from Postgres into the
 * shard's due set. ZADD is idempotent, so running it again (or beside the
 * API's own adds) is always safe. Postgres filters by the stored shard
 * (tasks.hot_shard), through an index that leads with it, keyset-paginated
 * per shard.
 *
 * A sweep costs what is new: every writer (API, planner, workflows, retries)
 * adds what it makes due inside the window itself, so once a shard has been
 * swept whole, the next sweep reads only the slice of time that entered the
 * window since. A shard is swept whole again when it may have lost entries:
 * the first sweep after its lease is taken, after a failed sweep, and
 * whenever the hot tier's content epoch of the shard changes (a Redis flush
 * or restart loses the epoch with the entries). An add a writer lost with
 * the hot tier up (its own network error) is the reconciler's re-hydration's
 * to repair, as before, before the task is due.
 *
 * Each incremental sweep also reads the last REREAD_MS of what it covered: a
 * task is visible only once its transaction commits, so one due just before
 * the last sweep's bound may commit after that sweep read past it (a request
 * still in flight, a writer whose clock runs behind). With a hot window of 0
 * the pre-loader is the only way into the hot tier, so that slice is what
 * keeps such a task from staying SCHEDULED for good.
 */
import { randomUUID } from "node:crypto";
import type { Clock } from "../../ports/clock.js";
import type { DispatchHotTier } from "../../ports/dispatch-hot-tier.js";
import type { DispatchMetrics } from "../../ports/dispatch-metrics.js";
import type { DispatchStore, ShardCursor } from "../../ports/dispatch-store.js";
import { sweepScheduled } from "./scheduled-sweep.js";

export interface PreloaderOptions {
  hotWindowMs: number;
  pageSize: number;
}

/** What the last successful sweep of a shard left in the hot tier. */
interface Covered {
  epoch: string;
  /** Every SCHEDULED task due before this was added. */
  untilMs: number;
}

/** Sorts after every uuid: a cursor after (t, MAX_UUID) resumes at the first task due after t. */
const MAX_UUID = "ffffffff-ffff-ffff-ffff-ffffffffffff";
/**
 * How far back of the covered bound an incremental sweep starts: longer than
 * any writer's transaction takes to commit (request deadlines and statement
 * timeouts are seconds) plus the clock skew between nodes.
 */
export const REREAD_MS = 60_000;

export class Preloader {
  private covered = new Map<number, Covered>();

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
    const shards = [...this.ownedShards()];
    const previous = this.covered;
    // Until this sweep succeeds nothing is vouched for: a failure leaves the next sweep whole.
    this.covered = new Map();
    if (shards.length === 0) return 0;
    const epochs = await this.hotTier.contentEpochs(shards, randomUUID());
    const beforeMs = this.clock.nowMs() + this.options.hotWindowMs;
    const intact = shards.map((shard, i) => {
      const last = previous.get(shard);
      return last !== undefined && last.epoch === epochs[i] ? last : null;
    });
    const start = shards.map(
      (shard, i): ShardCursor => ({
        shard,
        after: intact[i] ? { runAtMs: intact[i].untilMs - REREAD_MS, taskId: MAX_UUID } : null,
      }),
    );
    const total = await sweepScheduled(
      this.store,
      beforeMs,
      start,
      this.options.pageSize,
      async (page) => {
        await this.hotTier.addDue(page);
        return page.length;
      },
    );
    shards.forEach((shard, i) => {
      // A clock that stepped back does not shrink what was covered.
      const untilMs = Math.max(beforeMs, intact[i]?.untilMs ?? beforeMs);
      this.covered.set(shard, { epoch: epochs[i]!, untilMs });
    });
    this.metrics.preloaded(total);
    return total;
  }
}
