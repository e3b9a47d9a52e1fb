/**
 * Claims of published tasks, waiting to be forgotten in the hot tier. They
 * leave with the next claim round's pipeline (Dispatcher.round), so a
 * published task costs no Redis write of its own: at 1,000 tasks/s in
 * direct mode, one ack went out per wake of the wheel, about a thousand
 * writes a second (bench/RESULTS.md, session 17). A round with nothing to
 * claim, a release and a shutdown send them alone (flush), and so does a
 * pile past `maxPending`.
 *
 * Until it is sent a claim stays in the claimed set, as a lost ack always
 * could: after a crash it expires back to due and is armed again under a
 * newer epoch, a second envelope at worst, which the worker's fence absorbs.
 * Claims of a shard this process no longer holds are dropped, not sent: its
 * new owner has returned them to due and may have claimed the same members.
 */
import type { DispatchHotTier } from "../../ports/dispatch-hot-tier.js";
import type { Claim } from "../../ports/dispatch-store.js";

export type ClaimsByShard = Map<number, Claim[]>;

export class ClaimAcks {
  private pending: ClaimsByShard = new Map();
  private count = 0;

  constructor(
    private readonly hotTier: DispatchHotTier,
    private readonly onError: (error: unknown, what: string) => void,
    private readonly maxPending = 2000,
  ) {}

  get size(): number {
    return this.count;
  }

  add(shard: number, claim: Claim): void {
    const held = this.pending.get(shard);
    if (held) held.push(claim);
    else this.pending.set(shard, [claim]);
    if (++this.count >= this.maxPending) void this.flush(() => true);
  }

  /** Takes every pending claim of the shards `holds` says are still this process's. */
  take(holds: (shard: number) => boolean): ClaimsByShard {
    const taken: ClaimsByShard = new Map();
    for (const [shard, claims] of this.pending) if (holds(shard)) taken.set(shard, claims);
    this.pending = new Map();
    this.count = 0;
    return taken;
  }

  /** Puts back what a failed round took, to go with a later one. */
  restore(taken: ClaimsByShard): void {
    for (const [shard, claims] of taken) for (const claim of claims) this.add(shard, claim);
  }

  /** Sends the pending claims of held shards now, on their own. */
  async flush(holds: (shard: number) => boolean): Promise<void> {
    const taken = this.take(holds);
    if (taken.size === 0) return;
    await this.hotTier.ack(taken).catch((error: unknown) => this.onError(error, "ack"));
  }
}
