/**
 * The dispatcher role: one ShardDispatcher (with its own Wasm wheel) per
 * shard lease this process holds, started when the lease is acquired and
 * stopped when it is lost or released. See shard-dispatcher.ts for the loop
 * and app/leases.ts for the lease protocol.
 */
import type { Clock } from "../../ports/clock.js";
import type { DispatchHotTier } from "../../ports/dispatch-hot-tier.js";
import type { DispatchMetrics } from "../../ports/dispatch-metrics.js";
import type { DispatchStore } from "../../ports/dispatch-store.js";
import type { PreciseTimers } from "../../ports/precise-timers.js";
import { Loop } from "../loop.js";
import type { Outbox } from "./outbox.js";
import { ShardDispatcher, type ShardDispatchOptions } from "./shard-dispatcher.js";

export interface DispatcherOptions extends ShardDispatchOptions {
  claimIntervalMs: number;
  /** A release or shutdown waits at most this long for the wheel to empty. */
  drainTimeoutMs: number;
}

export interface DispatcherDeps {
  store: DispatchStore;
  hotTier: DispatchHotTier;
  outbox: Outbox;
  clock: Clock;
  metrics: DispatchMetrics;
  newTimers: () => PreciseTimers;
  holdsShard: (shard: number) => boolean;
  expireShard: (shard: number) => void;
  onError: (error: unknown, what: string) => void;
}

interface Running {
  dispatcher: ShardDispatcher;
  loop: Loop;
  timers: PreciseTimers;
}

const ADOPT_BATCH = 2000;

export class Dispatcher {
  private readonly running = new Map<number, Running>();

  constructor(
    private readonly deps: DispatcherDeps,
    private readonly options: DispatcherOptions,
  ) {}

  /** Shards being dispatched, with the tasks each holds. */
  heldBy(): Map<number, number> {
    return new Map([...this.running].map(([shard, r]) => [shard, r.dispatcher.size]));
  }

  acquired(shard: number, epoch: number): void {
    void this.stopShard(shard);
    const timers = this.deps.newTimers();
    const dispatcher = new ShardDispatcher(
      shard,
      epoch,
      {
        store: this.deps.store,
        hotTier: this.deps.hotTier,
        outbox: this.deps.outbox,
        clock: this.deps.clock,
        metrics: this.deps.metrics,
        timers,
        holds: () => this.deps.holdsShard(shard),
        lost: () => this.deps.expireShard(shard),
      },
      this.options,
    );
    let adopted = false;
    const step = async (): Promise<boolean> => {
      if (!adopted) {
        await this.adopt(shard);
        adopted = true;
      }
      return dispatcher.tick();
    };
    const loop = new Loop(step, this.options.claimIntervalMs, (error) =>
      this.deps.onError(error, `dispatch shard ${shard}`),
    ).start();
    this.running.set(shard, { dispatcher, loop, timers });
  }

  lost(shard: number): void {
    void this.stopShard(shard);
  }

  /** Voluntary release: stop claiming, publish what is held (bounded), give back the rest. */
  async releasing(shard: number): Promise<void> {
    const running = this.running.get(shard);
    if (!running) return;
    await withTimeout(running.dispatcher.drain(), this.options.drainTimeoutMs);
    await this.stopShard(shard);
  }

  async stopAll(): Promise<void> {
    await Promise.allSettled([...this.running.keys()].map((shard) => this.stopShard(shard)));
  }

  /** The previous owner's claims (it died or was paused) go back to due, to be armed under our epoch. */
  private async adopt(shard: number): Promise<void> {
    let returned = 0;
    for (;;) {
      const n = await this.deps.hotTier.returnExpired(shard, null, ADOPT_BATCH);
      returned += n;
      if (n < ADOPT_BATCH) break;
    }
    if (returned > 0) this.deps.metrics.claimsReturned(returned);
  }

  private async stopShard(shard: number): Promise<void> {
    const running = this.running.get(shard);
    if (!running) return;
    this.running.delete(shard);
    await running.loop.stop();
    try {
      await running.dispatcher.stop();
    } catch (error) {
      this.deps.onError(error, `give back shard ${shard}`);
    } finally {
      running.timers.close();
    }
  }
}

function withTimeout(promise: Promise<void>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
