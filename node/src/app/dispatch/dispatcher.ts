/**
 * The dispatcher role: one ShardDispatcher per shard lease this process
 * holds, all on one Wasm wheel, started when the lease is acquired and
 * stopped when it is lost or released; and one claim round for all of them
 * (see shard-dispatcher.ts for the steps and app/shared/leases.ts for the lease
 * protocol).
 *
 * Why one round for all shards, not one loop per shard: the claim is one
 * Redis pipeline and the arm one fenced UPDATE whatever the number of shards.
 * Sixteen loops sent sixteen statements per interval, and Postgres, sharing
 * two cores with everything else, spent its time on per-statement overhead
 * while the arms queued for the pool's connections past their run_at
 * (bench/RESULTS.md, Dispatch).
 *
 * Why the wheels stay on this thread rather than one worker_thread per shard
 * (docs/architecture.md section 6, step 7): the one Kafka producer lives here, so a worker per
 * shard adds a hop each way (armed tasks in, fired ids out) and sixteen more
 * event loops on a two-core machine. bench:dispatch-threads measured it at
 * 5,000 and 10,000 tasks/s: 274–306 µs of CPU per task with a worker per
 * shard against 131–245 µs on this thread, and seconds of lateness (p50
 * 2–4 s) where this thread's wheels fired at p50 1–6 ms in 3 of 4 runs
 * (load average 23–30 from other work: ratios, not absolutes). Change this
 * only with a measurement that says otherwise (more cores, for one).
 *
 * Why one wheel for all shards rather than one each: on one thread a wheel
 * per shard buys no parallelism, and each wheel had its own wake of the
 * event loop once per due millisecond (then from a sleeper thread each),
 * sixteen wakes where one does (the wakes were about a tenth of the
 * dispatcher's CPU). A shard's
 * timers are still its own: stopping it cancels exactly those.
 */
import type { Clock } from "../../ports/clock.js";
import type { DispatchHotTier } from "../../ports/dispatch-hot-tier.js";
import type { DispatchMetrics } from "../../ports/dispatch-metrics.js";
import type { ArmResult, DispatchStore } from "../../ports/dispatch-store.js";
import type { PreciseTimers } from "../../ports/precise-timers.js";
import { Loop } from "../shared/loop.js";
import { withTimeout } from "../shared/with-timeout.js";
import type { Outbox } from "./outbox.js";
import { ShardDispatcher } from "./shard-dispatcher.js";

export interface DispatcherOptions {
  nodeId: string;
  claimIntervalMs: number;
  claimLookaheadMs: number;
  claimTtlMs: number;
  /** Most ids claimed (and armed) in one round, over all its shards. */
  claimBatchSize: number;
  /**
   * Claim rounds running side by side, each over the shards s with s % roundGroups === its
   * index: one arm statement in flight per group (fewer than the pool's connections).
   */
  roundGroups: number;
  /** A release or shutdown waits at most this long for the wheel to empty. */
  drainTimeoutMs: number;
}

export interface DispatcherDeps {
  store: DispatchStore;
  hotTier: DispatchHotTier;
  outbox: Outbox;
  clock: Clock;
  metrics: DispatchMetrics;
  /** One wheel for every shard of this process (see the header). */
  timers: PreciseTimers;
  holdsShard: (shard: number) => boolean;
  expireShard: (shard: number) => void;
  onError: (error: unknown, what: string) => void;
}

interface Running {
  dispatcher: ShardDispatcher;
  adopted: boolean;
}

const ADOPT_BATCH = 2000;

export class Dispatcher {
  private readonly running = new Map<number, Running>();
  private readonly loops: Loop[];

  constructor(
    private readonly deps: DispatcherDeps,
    private readonly options: DispatcherOptions,
  ) {
    this.loops = Array.from(
      { length: options.roundGroups },
      (_, group) =>
        new Loop(
          () => this.round(group),
          options.claimIntervalMs,
          (error) => this.deps.onError(error, "dispatch round"),
        ),
    );
  }

  start(): this {
    for (const loop of this.loops) loop.start();
    return this;
  }

  /** Shards being dispatched, with the tasks each holds. */
  heldBy(): Map<number, number> {
    return new Map([...this.running].map(([shard, r]) => [shard, r.dispatcher.size]));
  }

  acquired(shard: number, epoch: number): void {
    void this.stopShard(shard);
    const dispatcher = new ShardDispatcher(shard, epoch, this.options.nodeId, {
      hotTier: this.deps.hotTier,
      outbox: this.deps.outbox,
      clock: this.deps.clock,
      metrics: this.deps.metrics,
      timers: this.deps.timers,
      holds: () => this.deps.holdsShard(shard),
      lost: () => this.deps.expireShard(shard),
    });
    this.running.set(shard, { dispatcher, adopted: false });
  }

  lost(shard: number): void {
    void this.stopShard(shard);
  }

  /** Voluntary release: stop claiming, publish what is held (bounded), give back the rest. */
  async releasing(shard: number): Promise<void> {
    const running = this.running.get(shard);
    if (!running) return;
    await withTimeout(running.dispatcher.drain(), this.options.drainTimeoutMs);
    await this.deps.outbox.acks.flush(); // while the shard and its lease are still ours
    await this.stopShard(shard);
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.loops.map((loop) => loop.stop()));
    await this.deps.outbox.acks.flush();
    await Promise.allSettled([...this.running.keys()].map((shard) => this.stopShard(shard)));
  }

  /**
   * One claim → arm → load round over every shard still claiming. Returns
   * true when some shard's claim was full (a backlog remains: go again at once).
   * A shard stopped meanwhile gives back what the round armed for it.
   */
  async round(group = 0): Promise<boolean> {
    const shards: Running[] = [];
    for (const r of this.running.values()) {
      if (r.dispatcher.shard % this.options.roundGroups !== group) continue;
      // A shard whose adoption failed sits this round out; the others go on.
      if (r.dispatcher.wantsClaims && (await this.adopt(r))) shards.push(r);
    }
    if (shards.length === 0) return false;
    const { store, hotTier, clock, outbox } = this.deps;
    const limit = Math.max(1, Math.ceil(this.options.claimBatchSize / shards.length));
    // What was published since the last round is forgotten beside this round's claim.
    const acked = outbox.acks.flush();
    const batches = await hotTier.claim(
      shards.map((r) => ({ shard: r.dispatcher.shard, limit })),
      clock.nowMs(),
      this.options.claimLookaheadMs,
      this.options.claimTtlMs,
    );
    await acked;
    const toArm = shards.map((r, i) => ({
      fence: r.dispatcher.fence,
      claims: r.dispatcher.claimed(batches[i]!),
    }));
    if (toArm.every((b) => b.claims.length === 0)) return false;
    let results: ArmResult[];
    try {
      results = await store.arm(toArm, clock.nowMs());
    } catch (error) {
      await Promise.all(shards.map((r, i) => r.dispatcher.armFailed(toArm[i]!.claims)));
      throw error;
    }
    await Promise.all(shards.map((r, i) => r.dispatcher.armed(toArm[i]!.claims, results[i]!)));
    return toArm.some((b) => b.claims.length >= limit);
  }

  /**
   * Before a shard's first claim: the previous owner's claims (it died or was paused) go back to
   * due, to be armed under our epoch. False while that has not succeeded yet.
   */
  private async adopt(running: Running): Promise<boolean> {
    if (running.adopted) return true;
    const { shard } = running.dispatcher;
    let returned = 0;
    try {
      for (;;) {
        const n = await this.deps.hotTier.returnExpired(shard, null, ADOPT_BATCH);
        returned += n;
        if (n < ADOPT_BATCH) break;
      }
    } catch (error) {
      this.deps.onError(error, `adopt shard ${shard}`);
      return false;
    } finally {
      if (returned > 0) this.deps.metrics.claimsReturned(returned);
    }
    running.adopted = true;
    return true;
  }

  private async stopShard(shard: number): Promise<void> {
    const running = this.running.get(shard);
    if (!running) return;
    this.running.delete(shard);
    try {
      await running.dispatcher.stop();
    } catch (error) {
      this.deps.onError(error, `give back shard ${shard}`);
    }
  }
}
