/**
 * Claims of published tasks, waiting to be forgotten in the hot tier. Each
 * claim round sends what piled up since the last one in one pipeline, beside
 * its claim (Dispatcher.round), so a published task costs no Redis write of
 * its own: at 1,000 tasks/s in direct mode the outbox sent one per wake of
 * the wheel, about a thousand a second (bench/RESULTS.md, session 17). A
 * release and a shutdown send them at once, and so does a pile past
 * `maxPending`.
 *
 * Until it is sent a claim stays in the claimed set, as a lost ack always
 * could: after a crash it expires back to due and is armed again under a
 * newer epoch, a second envelope at worst, which the worker's fence absorbs.
 * Claims are kept per shard dispatcher (shard and epoch) with its
 * `stillHolds`, and those of one that no longer holds its lease are dropped,
 * not sent: the shard's new owner has returned them to due and may have
 * claimed the same members.
 */
import type { DispatchHotTier } from "../../ports/dispatch-hot-tier.js";
import type { Claim } from "../../ports/dispatch-store.js";

/** Whose claims: one shard dispatcher, as the outbox knows it from its tasks. */
export interface ClaimOwner {
  shard: number;
  epoch: number;
  stillHolds: () => boolean;
}

interface Pending {
  owner: ClaimOwner;
  claims: Claim[];
}

export class ClaimAcks {
  private pending = new Map<string, Pending>();
  private count = 0;

  constructor(
    private readonly hotTier: DispatchHotTier,
    private readonly onError: (error: unknown, what: string) => void,
    private readonly maxPending = 2000,
  ) {}

  get size(): number {
    return this.count;
  }

  add(owner: ClaimOwner, claim: Claim): void {
    this.keep(owner, claim);
    if (this.count >= this.maxPending) void this.flush();
  }

  /** Sends every pending claim whose owner still holds its lease; a failed send keeps them for the next. */
  async flush(): Promise<void> {
    const taken = [...this.pending.values()].filter((p) => p.owner.stillHolds());
    this.pending = new Map();
    this.count = 0;
    if (taken.length === 0) return;
    const byShard = new Map<number, Claim[]>();
    for (const { owner, claims } of taken) {
      const shardClaims = byShard.get(owner.shard);
      if (shardClaims) shardClaims.push(...claims);
      else byShard.set(owner.shard, [...claims]);
    }
    try {
      await this.hotTier.ack(byShard);
    } catch (error) {
      this.onError(error, "ack");
      for (const { owner, claims } of taken) for (const claim of claims) this.keep(owner, claim);
    }
  }

  /** add() without the size check, which a failed send's claims must not set off again. */
  private keep(owner: ClaimOwner, claim: Claim): void {
    const key = `${owner.shard}:${owner.epoch}`;
    const held = this.pending.get(key);
    if (held) held.claims.push(claim);
    else this.pending.set(key, { owner, claims: [claim] });
    this.count++;
  }
}
