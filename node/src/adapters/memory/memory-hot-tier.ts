/**
 * The hot tier in the process's memory, for the embedded default
 * (`chronofence dev`): one object serves every role of the process as
 * `HotTier` (API, planner, worker), `DispatchHotTier` (dispatcher,
 * pre-loader, reconciler) and `CancelNotifier` (API), with the semantics of
 * the Redis adapters and their Lua scripts (adapters/redis/scripts/*.lua),
 * held to them by one contract suite (node/test/contract/hot-tier.contract.ts).
 *
 * Per shard, as in Redis:
 *  - due:     task id → run_at (DueQueue), claimed earliest first, ties by id;
 *  - claimed: "<run_at ms>:<task id>" → claim expiry, so that a claim goes
 *             back to due with its run_at;
 *  - cancels: ids cancelled since the shard's last claim (the last 100,000).
 *
 * Each call runs to completion before the next (one thread), which is the
 * atomicity the Lua scripts give in Redis. Everything is lost with the
 * process, as a Redis flush loses it: the pre-loader and the reconciler
 * rebuild it from Postgres (docs/architecture.md, invariant 2).
 */
import { shardOf } from "../../domain/shard.js";
import type { CancelNotifier } from "../../ports/cancel-notifier.js";
import type { ClaimBatch, ClaimRequest, DispatchHotTier } from "../../ports/dispatch-hot-tier.js";
import type { Claim } from "../../ports/dispatch-store.js";
import type { DueEntry, HotTier } from "../../ports/hot-tier.js";
import { DueQueue } from "./due-queue.js";

/** As in Redis (adapters/redis/dispatch-hot-tier.ts): a script call takes at most this many ids. */
const MAX_IDS_PER_CALL = 2000;
const MAX_PENDING_CANCELS = 100_000;

interface Shard {
  due: DueQueue;
  claimed: Map<string, number>;
  cancels: string[];
}

const memberOf = (claim: Claim): string => `${claim.runAtMs}:${claim.taskId}`;

function claimOf(member: string): Claim {
  const sep = member.indexOf(":");
  return { runAtMs: Number(member.slice(0, sep)), taskId: member.slice(sep + 1) };
}

export class MemoryHotTier implements HotTier, DispatchHotTier, CancelNotifier {
  private readonly shards = new Map<number, Shard>();

  async addDue(entries: readonly DueEntry[]): Promise<void> {
    for (const entry of entries) {
      this.shard(shardOf(entry.tenantId, entry.taskId)).due.add(entry.taskId, entry.runAtMs);
    }
  }

  /** Another process's API adds to its own memory, never to this one: nothing here is vouched for. */
  async contentEpochs(shards: readonly number[], candidate: string): Promise<string[]> {
    return shards.map(() => candidate);
  }

  isConnected(): boolean {
    return true;
  }

  async ping(): Promise<void> {}

  /** Shared by every role of the process: one role closing it must not take it from the others. */
  async close(): Promise<void> {}

  async claim(
    requests: readonly ClaimRequest[],
    nowMs: number,
    lookaheadMs: number,
    claimTtlMs: number,
  ): Promise<ClaimBatch[]> {
    return requests.map(({ shard: n, limit }) => {
      const shard = this.shard(n);
      const expiryMs = nowMs + claimTtlMs;
      const claims = shard.due
        .takeDue(nowMs + lookaheadMs, Math.min(limit, MAX_IDS_PER_CALL))
        .map(({ id, runAtMs }): Claim => ({ taskId: id, runAtMs }));
      for (const claim of claims) shard.claimed.set(memberOf(claim), expiryMs);
      const cancelled = shard.cancels;
      shard.cancels = [];
      return { claims, cancelled };
    });
  }

  async ack(claimsByShard: ReadonlyMap<number, readonly Claim[]>): Promise<void> {
    for (const [n, claims] of claimsByShard) {
      const claimed = this.shard(n).claimed;
      for (const claim of claims) claimed.delete(memberOf(claim));
    }
  }

  async giveBack(n: number, claims: readonly Claim[]): Promise<number> {
    const shard = this.shard(n);
    let returned = 0;
    for (const claim of claims) {
      if (!shard.claimed.delete(memberOf(claim))) continue; // acked or returned already
      shard.due.add(claim.taskId, claim.runAtMs);
      returned++;
    }
    return returned;
  }

  async returnExpired(n: number, expiredAtMs: number | null, limit: number): Promise<number> {
    const shard = this.shard(n);
    const upTo = expiredAtMs ?? Number.POSITIVE_INFINITY;
    const expired = [...shard.claimed]
      .filter(([, expiryMs]) => expiryMs <= upTo)
      .sort(([a, x], [b, y]) => x - y || (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, Math.min(limit, MAX_IDS_PER_CALL));
    for (const [member] of expired) {
      const claim = claimOf(member);
      shard.due.add(claim.taskId, claim.runAtMs);
      shard.claimed.delete(member);
    }
    return expired.length;
  }

  async rehydrate(entries: readonly DueEntry[]): Promise<number> {
    let added = 0;
    for (const entry of entries) {
      const shard = this.shard(shardOf(entry.tenantId, entry.taskId));
      if (shard.due.has(entry.taskId) || shard.claimed.has(memberOf(entry))) continue;
      shard.due.add(entry.taskId, entry.runAtMs);
      added++;
    }
    return added;
  }

  async cancelled(tenantId: string, taskId: string): Promise<void> {
    const shard = this.shard(shardOf(tenantId, taskId));
    shard.due.remove(taskId);
    shard.cancels.push(taskId);
    if (shard.cancels.length > MAX_PENDING_CANCELS) {
      shard.cancels.splice(0, shard.cancels.length - MAX_PENDING_CANCELS);
    }
  }

  private shard(n: number): Shard {
    let shard = this.shards.get(n);
    if (!shard) {
      shard = { due: new DueQueue(), claimed: new Map(), cancels: [] };
      this.shards.set(n, shard);
    }
    return shard;
  }
}
