/**
 * The lease protocol: how any number of processes split the 16 hot-tier
 * shards between them, and elect one leader, with Postgres as the only
 * arbiter and no coordinator.
 *
 * Ground rules
 *  1. A lease is a row (name, owner, epoch, expires_at). Acquiring one that
 *     is free or expired increments its epoch; the epoch is the fencing token
 *     of that authority. Renewal extends expires_at only if (owner, epoch) is
 *     still current, so a process that was paused past its expiry finds its
 *     renewal refused and knows it lost the lease.
 *  2. Locally, a lease is trusted only until `sent + ttl - safetyMargin`,
 *     measured on the monotonic clock from the moment the acquire or renew
 *     was *sent*: a pause, a slow round trip or a modest clock skew between
 *     nodes eats into the margin, never past the lease. Past that instant
 *     the lease counts as lost even if no one else took it; the next
 *     acquisition brings a new epoch.
 *  3. Writes are fenced in the database (the write's WHERE names the lease,
 *     owner and epoch); actions outside the database (publishing to Kafka)
 *     are fenced by rule 2: check `holds()` right before acting.
 *  4. Fair share: every process renews a membership lease `node:<family>:<id>`
 *     for each family of shard leases it runs (`shard` for dispatchers,
 *     `preload` for pre-loaders). On each heartbeat it counts the live
 *     members, computes its share (domain/fair-share.ts), releases what it
 *     holds beyond it and acquires free shards up to it. Releasing drains
 *     first (the listener decides how) and keeps renewing meanwhile.
 *     Expired membership rows are deleted by whichever node sees them; shard
 *     and leader rows never are (their epoch must only grow).
 *
 * Worked example (ttl 10 s, margin 2 s, heartbeat 3 s): A holds shard:3 at
 * epoch 7. A stops (SIGSTOP) at t=0. A's last renew was at t=-1 s, so the row
 * expires at t=9 s and A itself stops trusting it at t=7 s. B's heartbeat at
 * t≈9.5 s acquires shard:3 at epoch 8, adopts A's claims and arms them under
 * epoch 8. A resumes at t=20 s: every publish checks holds() — false — so A
 * publishes nothing for shard 3; any arm A sends carries epoch 7 and changes
 * 0 rows; A's next heartbeat finds its renewal refused and lets the shard go.
 */
import { LEADER_LEASE, planShards, type ShardView } from "../../domain/fair-share.js";
import { HOT_SHARD_COUNT } from "../../domain/shard.js";
import type { Clock } from "../../ports/clock.js";
import type { DispatchMetrics } from "../../ports/dispatch-metrics.js";
import type { LeaseStore } from "../../ports/lease-store.js";

export interface LeaseManagerOptions {
  nodeId: string;
  ttlMs: number;
  safetyMarginMs: number;
  /** Shard-lease families this process runs (`shard`, `preload`). */
  families: readonly string[];
  wantLeader: boolean;
  shardCount?: number;
  onError?: (error: unknown, what: string) => void;
}

/** Told about authority changes. Calls are not awaited except `releasing`. */
export interface LeaseListener {
  acquired(family: string, shard: number, epoch: number): void;
  /** The lease is gone (refused renewal or local expiry): stop acting for it at once. */
  lost(family: string, shard: number): void;
  /** Give the shard up in good order; the lease is released when this resolves. */
  releasing(family: string, shard: number): Promise<void>;
}

interface Held {
  epoch: number;
  validUntilMonoMs: number;
}

const leaseName = (family: string, shard: number) => `${family}:${shard}`;
const memberName = (family: string, nodeId: string) => `node:${family}:${nodeId}`;

export class LeaseManager {
  private readonly held = new Map<string, Held>();
  private readonly releasing = new Set<string>();
  private readonly listeners: LeaseListener[] = [];
  private readonly shardCount: number;
  private stopping = false;
  private beating: Promise<void> | undefined;

  constructor(
    private readonly store: LeaseStore,
    private readonly clock: Clock,
    private readonly metrics: DispatchMetrics,
    private readonly options: LeaseManagerOptions,
  ) {
    this.shardCount = options.shardCount ?? HOT_SHARD_COUNT;
  }

  /**
   * Adds a listener of acquisitions, losses and releases. Subscribe before the
   * first heartbeat: a listener hears only what happens after it subscribed.
   * Subscribing after construction lets the roles that act for a lease ask the
   * same manager whether they still hold it, without a construction loop.
   */
  subscribe(listener: LeaseListener): this {
    this.listeners.push(listener);
    return this;
  }

  /** True while `name` may be acted upon (rule 2). */
  holds(name: string): boolean {
    const held = this.held.get(name);
    return held !== undefined && held.validUntilMonoMs > this.clock.monotonicMs();
  }

  holdsShard(family: string, shard: number): boolean {
    return this.holds(leaseName(family, shard));
  }

  get isLeader(): boolean {
    return this.holds(LEADER_LEASE);
  }

  epochOf(family: string, shard: number): number | undefined {
    return this.held.get(leaseName(family, shard))?.epoch;
  }

  /** Shards of `family` held now (valid or not yet noticed as lost). */
  shards(family: string): number[] {
    const shards: number[] = [];
    for (let s = 0; s < this.shardCount; s++)
      if (this.held.has(leaseName(family, s))) shards.push(s);
    return shards;
  }

  /** The shards of `family` held and valid now (rule 2): those a role may act for. */
  validShards(family: string): number[] {
    return this.shards(family).filter((shard) => this.holdsShard(family, shard));
  }

  /** A user found the lease invalid (rule 2): forget it now rather than at the next heartbeat. */
  expire(family: string, shard: number): void {
    this.lose(leaseName(family, shard));
  }

  /** One heartbeat: expire, renew, join, rebalance, elect. Never overlaps itself (callers serialise). */
  async heartbeat(): Promise<void> {
    const beat = this.beat();
    this.beating = beat;
    try {
      await beat;
    } finally {
      if (this.beating === beat) this.beating = undefined;
    }
  }

  private async beat(): Promise<void> {
    const sentMonoMs = this.clock.monotonicMs();
    const nowMs = this.clock.nowMs();
    for (const [name, held] of this.held) if (held.validUntilMonoMs <= sentMonoMs) this.lose(name);
    await this.renew(sentMonoMs, nowMs);
    // Stopping: renew what is still being drained, join nothing again (a membership taken back
    // after releaseAll would make the other nodes wait for it to expire before taking over).
    if (this.stopping) return;
    for (const family of this.options.families) {
      await this.ensure(memberName(family, this.options.nodeId));
    }
    for (const family of this.options.families) await this.rebalance(family, nowMs);
    if (this.options.wantLeader) await this.ensure(LEADER_LEASE);
  }

  /** Graceful stop: take nothing more; drain and release every shard, then the rest. */
  async releaseAll(): Promise<void> {
    this.stopping = true;
    const drains: Promise<void>[] = [];
    for (const family of this.options.families) {
      for (const shard of this.shards(family)) drains.push(this.release(family, shard));
    }
    await Promise.allSettled(drains);
    await this.beating?.catch(() => undefined); // whatever it acquires is released below
    const rest = [...this.held].map(([name, held]) => ({ name, epoch: held.epoch }));
    await this.store.release(this.options.nodeId, rest, this.clock.nowMs()).catch(() => []);
    for (const { name } of rest) this.forget(name, "released");
  }

  private async renew(sentMonoMs: number, nowMs: number): Promise<void> {
    const leases = [...this.held].map(([name, held]) => ({ name, epoch: held.epoch }));
    if (leases.length === 0) return;
    const renewed = new Set(
      await this.store.renew(this.options.nodeId, leases, this.options.ttlMs, nowMs),
    );
    for (const { name } of leases) {
      const held = this.held.get(name);
      if (!held) continue;
      if (renewed.has(name)) held.validUntilMonoMs = this.validUntil(sentMonoMs);
      else this.lose(name);
    }
  }

  /**
   * Acquires `name` unless held. Times are read right before sending (rule 2): a heartbeat that
   * acquires many leases one after another on a slow database must not date the last ones back
   * to its start, or they would be expired locally before they were even granted.
   */
  private async ensure(name: string): Promise<number | null> {
    if (this.held.has(name)) return null;
    const sentMonoMs = this.clock.monotonicMs();
    const nowMs = this.clock.nowMs();
    const epoch = await this.store.acquire(name, this.options.nodeId, this.options.ttlMs, nowMs);
    if (epoch === null) return null;
    this.held.set(name, { epoch, validUntilMonoMs: this.validUntil(sentMonoMs) });
    this.metrics.leaseAcquired(name);
    return epoch;
  }

  private async rebalance(family: string, nowMs: number): Promise<void> {
    const records = await this.store.list([`${family}:`, `node:${family}:`]);
    const live = records.filter((r) => r.expiresAtMs > nowMs);
    // Members that stopped without releasing: any node may delete them, any number of times.
    const gone = records.filter((r) => r.name.startsWith("node:") && r.expiresAtMs <= nowMs);
    if (gone.length > 0) {
      await this.store.deleteExpiredMembers(
        gone.map((r) => r.name),
        nowMs,
      );
    }
    const members = live
      .filter((r) => r.name.startsWith("node:"))
      .map((r) => r.name.slice(`node:${family}:`.length));
    const owners = new Map(
      live.filter((r) => !r.name.startsWith("node:")).map((r) => [r.name, r.owner]),
    );
    const views: ShardView[] = [];
    for (let shard = 0; shard < this.shardCount; shard++) {
      const name = leaseName(family, shard);
      // What I hold counts as mine even if the row says otherwise: the renewal decides.
      const owner = this.held.has(name) ? this.options.nodeId : (owners.get(name) ?? null);
      views.push({ shard, liveOwner: owner });
    }
    const plan = planShards(this.options.nodeId, members, views);
    for (const shard of plan.release) {
      if (!this.releasing.has(leaseName(family, shard))) void this.release(family, shard);
    }
    const wanted = plan.acquire.filter((shard) => !this.held.has(leaseName(family, shard)));
    if (wanted.length === 0) return;
    const sentMonoMs = this.clock.monotonicMs();
    const acquired = await this.store.acquireAll(
      wanted.map((shard) => leaseName(family, shard)),
      this.options.nodeId,
      this.options.ttlMs,
      this.clock.nowMs(),
    );
    const epochs = new Map(acquired.map((l) => [l.name, l.epoch]));
    for (const shard of wanted) {
      const name = leaseName(family, shard);
      const epoch = epochs.get(name);
      if (epoch === undefined) continue;
      this.held.set(name, { epoch, validUntilMonoMs: this.validUntil(sentMonoMs) });
      this.metrics.leaseAcquired(name);
      for (const listener of this.listeners) listener.acquired(family, shard, epoch);
    }
  }

  private async release(family: string, shard: number): Promise<void> {
    const name = leaseName(family, shard);
    const held = this.held.get(name);
    if (!held || this.releasing.has(name)) return;
    this.releasing.add(name);
    try {
      await Promise.all(this.listeners.map((listener) => listener.releasing(family, shard)));
      if (this.held.get(name) !== held) return; // lost meanwhile
      await this.store.release(
        this.options.nodeId,
        [{ name, epoch: held.epoch }],
        this.clock.nowMs(),
      );
      this.forget(name, "released");
    } catch (error) {
      // Drained but not released: kept, it would be renewed with nothing acting for it (the
      // listener gave it up) for as long as this node wants it. Lost, it expires and is taken
      // again under a new epoch, by whichever node then wants it.
      this.options.onError?.(error, `release ${name}`);
      if (this.held.get(name) === held) this.lose(name); // not a newer acquisition meanwhile
    } finally {
      this.releasing.delete(name);
    }
  }

  private lose(name: string): void {
    if (!this.held.has(name)) return;
    this.forget(name, "lost");
    const sep = name.lastIndexOf(":");
    const family = name.slice(0, sep);
    const shard = Number(name.slice(sep + 1));
    if (this.options.families.includes(family) && Number.isInteger(shard)) {
      for (const listener of this.listeners) listener.lost(family, shard);
    }
  }

  private forget(name: string, how: "lost" | "released"): void {
    if (!this.held.delete(name)) return;
    if (how === "lost") this.metrics.leaseLost(name);
    else this.metrics.leaseReleased(name);
  }

  private validUntil(sentMonoMs: number): number {
    return sentMonoMs + this.options.ttlMs - this.options.safetyMarginMs;
  }
}

/** Where a lease listener reports (a pino logger fits). */
export interface LeaseLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** A listener that only logs: for roles whose writes are all fenced, with nothing to drain. */
export function loggingLeaseListener(log: LeaseLog): LeaseListener {
  return {
    acquired: (family, shard, epoch) => log.info({ family, shard, epoch }, "lease acquired"),
    lost: (family, shard) => log.warn({ family, shard }, "lease lost"),
    releasing: async (family, shard) => log.info({ family, shard }, "releasing lease"),
  };
}

/** What acts for the shards of one lease family (the dispatcher does). */
export interface ShardActor {
  acquired(shard: number, epoch: number): void;
  lost(shard: number): void;
  releasing(shard: number): Promise<void>;
}

/** A listener that passes one family's events to `actor` and ignores the others. */
export function familyListener(family: string, actor: ShardActor): LeaseListener {
  return {
    acquired: (f, shard, epoch) => {
      if (f === family) actor.acquired(shard, epoch);
    },
    lost: (f, shard) => {
      if (f === family) actor.lost(shard);
    },
    releasing: async (f, shard) => {
      if (f === family) await actor.releasing(shard);
    },
  };
}
