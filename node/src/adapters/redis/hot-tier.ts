/**
 * The Redis hot tier: one sorted set per shard, `<prefix>:{<shard>}:due`,
 * score = run_at in epoch ms, member = task id. ZADD is idempotent, so
 * re-adding (by the API, then the pre-loader) is harmless.
 */
import { Redis } from "ioredis";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import { dueKey, shardOf } from "../../domain/shard.js";
import type { DueEntry, HotTier } from "../../ports/hot-tier.js";

export interface RedisOptions {
  url: string;
  keyPrefix: string;
  commandTimeoutMs: number;
  connectTimeoutMs: number;
  onError: (error: Error) => void;
}

export function createRedis(options: RedisOptions): Redis {
  const redis = new Redis(options.url, {
    commandTimeout: options.commandTimeoutMs,
    // A command timeout leaves the socket open: on a half-open connection (a frozen host, a
    // partition) every command would time out until the kernel gives up, about 15 minutes.
    // No answer to a pending command for this long drops the socket and reconnects.
    socketTimeout: Math.max(5 * options.commandTimeoutMs, 5000),
    // Commands whose callers already gave up (timed out) are not sent again on the new
    // connection: a claim nobody awaits would hold its ids for the claim TTL.
    autoResendUnfulfilledCommands: false,
    connectTimeout: options.connectTimeoutMs,
    // Fail fast while disconnected: callers answer 503 or count a lost add.
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    lazyConnect: true,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
  });
  redis.on("error", options.onError);
  return redis;
}

export class RedisHotTier implements HotTier {
  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix: string,
  ) {}

  async connect(): Promise<void> {
    if (this.redis.status === "wait") await this.redis.connect();
  }

  async addDue(entries: readonly DueEntry[]): Promise<void> {
    if (entries.length === 0) return;
    // One ZADD per shard with many members, all in one pipeline: one round trip.
    const byShard = new Map<number, Array<string | number>>();
    for (const entry of entries) {
      const shard = shardOf(entry.tenantId, entry.taskId);
      const args = byShard.get(shard) ?? [];
      if (args.length === 0) byShard.set(shard, args);
      args.push(entry.runAtMs, entry.taskId);
    }
    const pipeline = this.redis.pipeline();
    for (const [shard, args] of byShard) pipeline.zadd(dueKey(this.keyPrefix, shard), ...args);
    const results = await pipeline.exec().catch((error: unknown) => {
      throw unavailable(error);
    });
    const failed = results?.find(([error]) => error !== null);
    if (failed) throw unavailable(failed[0]);
  }

  isConnected(): boolean {
    return this.redis.status === "ready";
  }

  async ping(): Promise<void> {
    await this.redis.ping().catch((error: unknown) => {
      throw unavailable(error);
    });
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

const unavailable = (cause: unknown) =>
  new ChronofenceError(ErrorCode.Unavailable, "redis unavailable", { cause });
