/**
 * What one shard's dispatcher holds, for as long as this process holds the
 * shard's lease (epoch E). The claim → arm round itself runs for all owned
 * shards at once (dispatcher.ts); each shard's part of it lands here.
 *
 *   every claim round (claimIntervalMs, at once again while a backlog remains):
 *     1. claim   Lua: ids due before now + lookahead move from `due` to
 *                `claimed` (with a claim expiry), and the ids cancelled since
 *                the last claim come back with them.
 *     2. arm     one UPDATE for the round: SCHEDULED → ARMED with a new
 *                fencing token each, only if lease (shard, me, E) is still
 *                current. Not fenced ⇒ we are stale: give the claims back,
 *                count it, and let the lease go.
 *     3. load    each armed task into the Wasm wheel at its run_at;
 *                cancelled ids leave the wheel.
 *   when the wheel fires a task:
 *     4. check   wall clock ≥ run_at (else wait the rest: never early) and the
 *                lease still valid locally (else drop it: never publish for a
 *                shard we may have lost — its new owner re-arms it).
 *     5. publish through the Outbox (one produce request per event-loop turn);
 *                after the broker's ack the claim is removed from Redis.
 *
 * Why claims stay in `claimed` until published: if this process dies, the
 * next owner of the shard (a newer epoch) adopts them, and the arm UPDATE lets
 * a newer epoch take over tasks ARMED under an older one. Nothing is lost;
 * at worst a task dispatched just before the crash goes out twice.
 */
import type { ArmedTask } from "../../domain/envelope.js";
import type { Clock } from "../../ports/clock.js";
import type { ClaimBatch, DispatchHotTier } from "../../ports/dispatch-hot-tier.js";
import type { DispatchMetrics } from "../../ports/dispatch-metrics.js";
import type { ArmResult, Claim, ShardFence } from "../../ports/dispatch-store.js";
import type { PreciseTimer, PreciseTimers } from "../../ports/precise-timers.js";
import type { Outbox } from "./outbox.js";

export interface ShardDeps {
  hotTier: DispatchHotTier;
  outbox: Outbox;
  clock: Clock;
  metrics: DispatchMetrics;
  timers: PreciseTimers;
  /** Is the shard lease still valid locally (lease rule 2)? */
  holds: () => boolean;
  /** The lease is gone (stale fence, local expiry): the owner of this object stops it. */
  lost: () => void;
}

interface Loaded {
  task: ArmedTask;
  timer: PreciseTimer;
}

export class ShardDispatcher {
  private readonly loaded = new Map<string, Loaded>();
  private publishing = 0;
  private claiming = true;
  private stopped = false;
  private idleWaiters: Array<() => void> = [];

  constructor(
    readonly shard: number,
    readonly epoch: number,
    private readonly nodeId: string,
    private readonly deps: ShardDeps,
  ) {}

  /** Tasks held: in the wheel or being published. */
  get size(): number {
    return this.loaded.size + this.publishing;
  }

  /** Not once the lease is invalid locally (rule 2): a resumed stale process takes nothing from the shard's new owner. */
  get wantsClaims(): boolean {
    return this.claiming && !this.stopped && this.deps.holds();
  }

  get fence(): ShardFence {
    return { shard: this.shard, owner: this.nodeId, epoch: this.epoch };
  }

  /** Step 1 landed: drops what was cancelled; returns the claims to arm. */
  claimed(batch: ClaimBatch): readonly Claim[] {
    this.dropCancelled(batch.cancelled);
    if (batch.claims.length > 0) this.deps.metrics.claimed(this.shard, batch.claims.length);
    return batch.claims;
  }

  /** The arm failed: the claims go back to due for the next round. */
  async armFailed(claims: readonly Claim[]): Promise<void> {
    if (claims.length > 0) await this.deps.hotTier.giveBack(this.shard, claims).catch(() => 0);
  }

  /** Step 2 landed: loads what was armed (step 3), or lets the lease go if the fence refused. */
  async armed(claims: readonly Claim[], result: ArmResult): Promise<void> {
    if (claims.length === 0) return;
    const { hotTier, metrics } = this.deps;
    if (!result.fenced) {
      metrics.staleEpochRejected(this.shard, claims.length, "db");
      await hotTier.giveBack(this.shard, claims).catch(() => 0);
      this.deps.lost();
      return;
    }
    metrics.armed(this.shard, result.armed.length);
    if (this.stopped) {
      // Lost while arming: what we armed goes back for the new owner.
      await hotTier.giveBack(this.shard, result.armed.map(claimOf)).catch(() => 0);
    } else {
      for (const task of result.armed) this.load(task);
      metrics.wheelSize(this.shard, this.loaded.size);
    }
    // After the load: a failed ack (the round reports it) must not keep what was armed out of
    // the wheel; the claims it leaves behind expire back to due, and the next arm refuses them.
    await this.forgetUnarmed(claims, result.armed);
  }

  /** Stop claiming; resolves once everything held was published (or dropped). */
  drain(): Promise<void> {
    this.claiming = false;
    if (this.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stop for good: cancel the wheel's timers and give the claims back for the next owner. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.claiming = false;
    const held = [...this.loaded.values()];
    for (const { timer } of held) timer.cancel();
    this.loaded.clear();
    this.deps.metrics.wheelSize(this.shard, 0);
    this.notifyIdle();
    if (held.length > 0) {
      const returned = await this.deps.hotTier.giveBack(
        this.shard,
        held.map((h) => claimOf(h.task)),
      );
      this.deps.metrics.claimsReturned(returned);
    }
  }

  private load(task: ArmedTask): void {
    if (this.loaded.has(task.id)) return;
    const timer = this.deps.timers.at(task.runAtMs, () => this.fire(task));
    this.loaded.set(task.id, { task, timer });
  }

  private fire(task: ArmedTask): void {
    if (this.stopped) return;
    const nowMs = this.deps.clock.nowMs();
    if (nowMs < task.runAtMs) {
      // The precise clock ran ahead of the wall clock: wait the difference.
      const timer = this.deps.timers.at(task.runAtMs, () => this.fire(task));
      this.loaded.set(task.id, { task, timer });
      return;
    }
    if (!this.deps.holds()) {
      this.deps.metrics.staleEpochRejected(this.shard, 1, "local");
      this.deps.lost();
      return;
    }
    this.loaded.delete(task.id);
    this.publishing++;
    this.deps.outbox.add({
      task,
      shard: this.shard,
      epoch: this.epoch,
      stillHolds: () => !this.stopped && this.deps.holds(),
      settled: () => {
        this.publishing--;
        if (this.size === 0) this.notifyIdle();
      },
    });
    this.deps.metrics.wheelSize(this.shard, this.loaded.size);
  }

  private dropCancelled(ids: readonly string[]): void {
    let dropped = 0;
    for (const id of ids) {
      const held = this.loaded.get(id);
      if (held?.timer.cancel()) {
        this.loaded.delete(id);
        dropped++;
      }
    }
    if (dropped > 0) {
      this.deps.metrics.cancelledDropped(dropped);
      if (this.size === 0) this.notifyIdle();
    }
  }

  /** Claims that armed nothing (cancelled, already armed, unknown) need nothing more. */
  private async forgetUnarmed(
    claims: readonly Claim[],
    armed: readonly ArmedTask[],
  ): Promise<void> {
    if (armed.length === claims.length) return;
    const armedIds = new Set(armed.map((t) => t.id));
    // A duplicate of a task already in the wheel shares its claim: keep that one.
    const idle = claims.filter((c) => !armedIds.has(c.taskId) && !this.loaded.has(c.taskId));
    await this.deps.hotTier.ack(new Map([[this.shard, idle]]));
  }

  private notifyIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

const claimOf = (task: ArmedTask): Claim => ({ taskId: task.id, runAtMs: task.runAtMs });
