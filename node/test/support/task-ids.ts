import { randomUUID } from "node:crypto";
import { shardOf } from "../../src/domain/shard.js";

/** A task id of `tenantId` that falls into hot shard `shard` (domain/shard.ts). */
export function taskIdInShard(tenantId: string, shard: number): string {
  for (;;) {
    const id = randomUUID();
    if (shardOf(tenantId, id) === shard) return id;
  }
}
