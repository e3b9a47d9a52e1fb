/**
 * Fair share of the hot-tier shards, decided by each node alone (no
 * coordinator). Every node sees the same list of live nodes (membership
 * leases) and ranks itself in it; the first `shardCount mod nodes` nodes take
 * one shard more than the others. A node above its target gives up its
 * highest shards; a node below it takes free or expired shards, lowest first.
 * Views differ for a moment when a node joins or dies, so the cluster
 * converges over a few heartbeats rather than in one step — and an
 * over-subscribed moment is harmless because every shard has one lease.
 */
export interface ShardView {
  shard: number;
  /** The owner of a live lease, or null when the shard is free or its lease expired. */
  liveOwner: string | null;
}

export interface ShardPlan {
  /** Shards to try to acquire now (free or expired), lowest first. */
  acquire: number[];
  /** Shards this node holds beyond its share, to release now. */
  release: number[];
  target: number;
}

/** How many shards `me` should hold among `liveNodes` (me included, whether or not listed). */
export function targetShareOf(
  me: string,
  liveNodes: readonly string[],
  shardCount: number,
): number {
  const nodes = [...new Set([...liveNodes, me])].sort();
  const rank = nodes.indexOf(me);
  const base = Math.floor(shardCount / nodes.length);
  return base + (rank < shardCount % nodes.length ? 1 : 0);
}

export function planShards(
  me: string,
  liveNodes: readonly string[],
  shards: readonly ShardView[],
): ShardPlan {
  const target = targetShareOf(me, liveNodes, shards.length);
  const mine = shards.filter((s) => s.liveOwner === me).map((s) => s.shard);
  if (mine.length > target) {
    const release = [...mine].sort((a, b) => b - a).slice(0, mine.length - target);
    return { acquire: [], release, target };
  }
  const free = shards.filter((s) => s.liveOwner === null).map((s) => s.shard);
  const acquire = free.sort((a, b) => a - b).slice(0, target - mine.length);
  return { acquire, release: [], target };
}

/** The dispatchers' shard leases are `shard:<n>`; the cluster leader's is `leader`. */
export const DISPATCH_FAMILY = "shard";
export const PRELOAD_FAMILY = "preload";
export const shardLeaseName = (shard: number, family = DISPATCH_FAMILY): string =>
  `${family}:${shard}`;
export const LEADER_LEASE = "leader";
