/**
 * Which hot-tier shard a task belongs to: FNV-1a (32-bit) of "tenant:id",
 * modulo the shard count. Every role that touches Redis (API, pre-loader,
 * dispatcher, reconciler) must use this one function, or tasks get lost
 * between shards.
 */
export const HOT_SHARD_COUNT = 16;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

export function fnv1a32(text: string): number {
  let hash = FNV_OFFSET;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, FNV_PRIME) >>> 0;
  }
  return hash >>> 0;
}

export function shardOf(tenantId: string, taskId: string, shardCount = HOT_SHARD_COUNT): number {
  return fnv1a32(`${tenantId}:${taskId}`) % shardCount;
}

/** `cf:{3}:due` — the braces are a Redis Cluster hash tag, so a shard's keys share a slot. */
export const dueKey = (prefix: string, shard: number): string => `${prefix}:{${shard}}:due`;

/** Ids a dispatcher took from due and has not yet published: `cf:{3}:claimed`. */
export const claimedKey = (prefix: string, shard: number): string => `${prefix}:{${shard}}:claimed`;

/** The token of the shard's present contents (DispatchHotTier.contentEpochs): `cf:{3}:epoch`. */
export const epochKey = (prefix: string, shard: number): string => `${prefix}:{${shard}}:epoch`;

/** Ids cancelled since the shard's last claim: `cf:{3}:cancels`. */
export const cancelsKey = (prefix: string, shard: number): string => `${prefix}:{${shard}}:cancels`;
