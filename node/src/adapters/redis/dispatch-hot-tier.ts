/**
 * The hot tier as the dispatcher, pre-loader and reconciler use it: Lua
 * scripts for the multi-key steps (claim, give back, return expired,
 * rehydrate), plain commands for the rest. Every time is an argument.
 */
import type { Redis } from "ioredis";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import { cancelsKey, claimedKey, dueKey, epochKey, shardOf } from "../../domain/shard.js";
import type { CancelNotifier } from "../../ports/cancel-notifier.js";
import type { ClaimBatch, ClaimRequest, DispatchHotTier } from "../../ports/dispatch-hot-tier.js";
import type { Claim } from "../../ports/dispatch-store.js";
import type { DueEntry } from "../../ports/hot-tier.js";
import { loadScript } from "./scripts.js";

/** Keeps each script call short (Lua's unpack has a limit near 8000 values). */
export const MAX_IDS_PER_SCRIPT = 2000;
const MAX_PENDING_CANCELS = 100_000;

const SCRIPTS = [
  loadScript("claim", 3),
  loadScript("give-back", 2),
  loadScript("return-expired", 2),
  loadScript("rehydrate", 2),
];

interface ScriptCommands {
  claim(
    due: string,
    claimed: string,
    cancels: string,
    ...argv: Array<string | number>
  ): Promise<[string[], string[]]>;
  "give-back"(due: string, claimed: string, ...members: string[]): Promise<number>;
  "return-expired"(due: string, claimed: string, upTo: string, limit: number): Promise<number>;
  rehydrate(due: string, claimed: string, ...pairs: Array<string | number>): Promise<number>;
}

const memberOf = (claim: Claim): string => `${claim.runAtMs}:${claim.taskId}`;

export class RedisDispatchHotTier implements DispatchHotTier, CancelNotifier {
  private readonly commands: ScriptCommands;

  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix: string,
  ) {
    for (const script of SCRIPTS) {
      if (!(script.name in redis)) {
        redis.defineCommand(script.name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
      }
    }
    this.commands = redis as unknown as ScriptCommands;
  }

  async claim(
    requests: readonly ClaimRequest[],
    nowMs: number,
    lookaheadMs: number,
    claimTtlMs: number,
  ): Promise<ClaimBatch[]> {
    if (requests.length === 0) return [];
    // One pipeline: the shards' scripts stay separate (a script touches one hash slot).
    const pipeline = this.redis.pipeline() as unknown as ScriptCommands & {
      exec(): Promise<Array<[Error | null, unknown]> | null>;
    };
    for (const { shard, limit } of requests) {
      void pipeline.claim(
        dueKey(this.keyPrefix, shard),
        claimedKey(this.keyPrefix, shard),
        cancelsKey(this.keyPrefix, shard),
        nowMs,
        lookaheadMs,
        claimTtlMs,
        Math.min(limit, MAX_IDS_PER_SCRIPT),
      );
    }
    const results = await this.run(() => pipeline.exec());
    return requests.map((_, i) => {
      const [error, reply] = results?.[i] ?? [new Error("no reply"), null];
      if (error) throw unavailable(error);
      const [flat, cancelled] = reply as [string[], string[]];
      const claims: Claim[] = [];
      for (let j = 0; j < flat.length; j += 2) {
        claims.push({ taskId: flat[j]!, runAtMs: Number(flat[j + 1]) });
      }
      return { claims, cancelled };
    });
  }

  async ack(claimsByShard: ReadonlyMap<number, readonly Claim[]>): Promise<void> {
    const pipeline = this.redis.pipeline();
    for (const [shard, claims] of claimsByShard) {
      if (claims.length > 0)
        pipeline.zrem(claimedKey(this.keyPrefix, shard), ...claims.map(memberOf));
    }
    if (pipeline.length === 0) return;
    const results = await this.run(() => pipeline.exec());
    const failed = results?.find(([error]) => error !== null);
    if (failed) throw unavailable(failed[0]);
  }

  async giveBack(shard: number, claims: readonly Claim[]): Promise<number> {
    let returned = 0;
    for (let i = 0; i < claims.length; i += MAX_IDS_PER_SCRIPT) {
      const members = claims.slice(i, i + MAX_IDS_PER_SCRIPT).map(memberOf);
      returned += await this.run(() =>
        this.commands["give-back"](
          dueKey(this.keyPrefix, shard),
          claimedKey(this.keyPrefix, shard),
          ...members,
        ),
      );
    }
    return returned;
  }

  async returnExpired(shard: number, expiredAtMs: number | null, limit: number): Promise<number> {
    const upTo = expiredAtMs === null ? "+inf" : String(expiredAtMs);
    return this.run(() =>
      this.commands["return-expired"](
        dueKey(this.keyPrefix, shard),
        claimedKey(this.keyPrefix, shard),
        upTo,
        Math.min(limit, MAX_IDS_PER_SCRIPT),
      ),
    );
  }

  async rehydrate(entries: readonly DueEntry[]): Promise<number> {
    let added = 0;
    for (const [shard, group] of groupByShard(entries)) {
      for (let i = 0; i < group.length; i += MAX_IDS_PER_SCRIPT) {
        const pairs = group.slice(i, i + MAX_IDS_PER_SCRIPT).flatMap((e) => [e.taskId, e.runAtMs]);
        added += await this.run(() =>
          this.commands.rehydrate(
            dueKey(this.keyPrefix, shard),
            claimedKey(this.keyPrefix, shard),
            ...pairs,
          ),
        );
      }
    }
    return added;
  }

  async addDue(entries: readonly DueEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const [shard, group] of groupByShard(entries)) {
      pipeline.zadd(dueKey(this.keyPrefix, shard), ...group.flatMap((e) => [e.runAtMs, e.taskId]));
    }
    const results = await this.run(() => pipeline.exec());
    const failed = results?.find(([error]) => error !== null);
    if (failed) throw unavailable(failed[0]);
  }

  async contentEpochs(shards: readonly number[], candidate: string): Promise<string[]> {
    if (shards.length === 0) return [];
    const pipeline = this.redis.pipeline();
    // SET … NX GET (Redis 7): the present token, or nil once `candidate` is set in its place.
    for (const shard of shards)
      pipeline.set(epochKey(this.keyPrefix, shard), candidate, "NX", "GET");
    const results = await this.run(() => pipeline.exec());
    return shards.map((_, i) => {
      const [error, reply] = results?.[i] ?? [new Error("no reply"), null];
      if (error) throw unavailable(error);
      return reply === null ? candidate : String(reply);
    });
  }

  /** After a cancel commits: out of due, and onto the shard's cancel list for the dispatcher holding it. */
  async cancelled(tenantId: string, taskId: string): Promise<void> {
    const shard = shardOf(tenantId, taskId);
    const cancels = cancelsKey(this.keyPrefix, shard);
    await this.run(() =>
      this.redis
        .pipeline()
        .zrem(dueKey(this.keyPrefix, shard), taskId)
        .rpush(cancels, taskId)
        .ltrim(cancels, -MAX_PENDING_CANCELS, -1)
        .exec(),
    );
  }

  private async run<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw unavailable(error);
    }
  }
}

function groupByShard(entries: readonly DueEntry[]): Map<number, DueEntry[]> {
  const byShard = new Map<number, DueEntry[]>();
  for (const entry of entries) {
    const shard = shardOf(entry.tenantId, entry.taskId);
    const group = byShard.get(shard);
    if (group) group.push(entry);
    else byShard.set(shard, [entry]);
  }
  return byShard;
}

const unavailable = (cause: unknown) =>
  new ChronofenceError(ErrorCode.Unavailable, "redis unavailable", { cause });
