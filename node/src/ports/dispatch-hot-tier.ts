import type { Claim } from "./dispatch-store.js";
import type { DueEntry } from "./hot-tier.js";

export interface ClaimRequest {
  shard: number;
  /** Most ids to take from this shard. */
  limit: number;
}

export interface ClaimBatch {
  claims: Claim[];
  /** Ids cancelled since the last claim of this shard. */
  cancelled: string[];
}

/**
 * The hot tier as the dispatcher roles see it. Per shard: `due` (run_at
 * scores), `claimed` (what a dispatcher took and has not yet published, with
 * a claim expiry) and a list of cancelled ids. All times are passed in.
 */
export interface DispatchHotTier {
  /**
   * Per requested shard, atomically moves ids due before nowMs + lookaheadMs
   * from due to claimed (all shards in one round trip). One batch per request, in order.
   */
  claim(
    requests: readonly ClaimRequest[],
    nowMs: number,
    lookaheadMs: number,
    claimTtlMs: number,
  ): Promise<ClaimBatch[]>;
  /** Forgets claims that were published (or need nothing more), of any shards, in one round trip. */
  ack(claimsByShard: ReadonlyMap<number, readonly Claim[]>): Promise<void>;
  /** Puts claims back into due (the dispatcher gives them up). Returns how many were still claimed. */
  giveBack(shard: number, claims: readonly Claim[]): Promise<number>;
  /** Puts every claim whose expiry is at or before `expiredAtMs` back into due (null: all of them). */
  returnExpired(shard: number, expiredAtMs: number | null, limit: number): Promise<number>;
  /** Adds entries found in neither due nor claimed; returns how many it added. */
  rehydrate(entries: readonly DueEntry[]): Promise<number>;
  /** Idempotent add (the pre-loader). */
  addDue(entries: readonly DueEntry[]): Promise<void>;
  /**
   * Per shard, in order: the token of the shard's present contents, set to
   * `candidate` where it has none. It changes whenever the shard may have
   * lost entries (a Redis flush or restart loses the token with them), so a
   * pre-loader that filled the shard under one token knows its adds are
   * still there while the token is the same. A tier that cannot vouch for
   * that (one in a process's memory, which other processes' adds never
   * reach) answers `candidate` every time.
   */
  contentEpochs(shards: readonly number[], candidate: string): Promise<string[]>;
}
