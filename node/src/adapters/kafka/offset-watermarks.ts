/**
 * Which Kafka offsets may be committed while messages of a partition finish
 * out of order: per partition, the offsets handed out, in order; the commit
 * point is just past the longest prefix of them that is done. A message
 * whose outcome is not durable holds back every offset after it, so a crash
 * re-delivers it (and the ones behind it, which fenced starts then skip).
 *
 * A new group generation (a rebalance) starts over: what was handed out
 * before it is forgotten, and marking it done later changes nothing.
 */
export interface Handout {
  readonly partition: number;
  readonly offset: string;
  readonly generation: number;
  done: boolean;
}

interface PartitionState {
  handedOut: Handout[];
  /** Index of the first handout not yet known to be done. */
  head: number;
  /** The last offset of the done prefix (its commit point is the next one, computed when asked). */
  lastDone: string | null;
  committed: string | null;
}

export interface Commit {
  partition: number;
  /** The offset of the next message to consume. */
  offset: string;
}

export class OffsetWatermarks {
  private partitions = new Map<number, PartitionState>();
  private generation = 0;
  private retainedCount = 0;

  /** Handouts not yet past their partition's commit point (finished or not). */
  get retained(): number {
    return this.retainedCount;
  }

  /** Hands out a message's offset; offsets of one partition must come in increasing order. */
  begin(partition: number, offset: string): Handout {
    let state = this.partitions.get(partition);
    if (!state) {
      state = { handedOut: [], head: 0, lastDone: null, committed: null };
      this.partitions.set(partition, state);
    }
    const handout: Handout = { partition, offset, generation: this.generation, done: false };
    state.handedOut.push(handout);
    this.retainedCount++;
    return handout;
  }

  done(handout: Handout): void {
    handout.done = true;
    const state = this.partitions.get(handout.partition);
    if (!state || handout.generation !== this.generation) return;
    const { handedOut } = state;
    while (state.head < handedOut.length && handedOut[state.head]!.done) {
      state.lastDone = handedOut[state.head]!.offset;
      state.head++;
      this.retainedCount--;
    }
    // Drop the done prefix now and then rather than shift() on every message.
    if (state.head > 1024 && state.head * 2 > handedOut.length) {
      state.handedOut = handedOut.slice(state.head);
      state.head = 0;
    }
  }

  /** Commit points that moved since they were last committed. */
  pending(): Commit[] {
    const commits: Commit[] = [];
    for (const [partition, state] of this.partitions) {
      if (state.lastDone === null) continue;
      const offset = (BigInt(state.lastDone) + 1n).toString();
      if (offset !== state.committed) commits.push({ partition, offset });
    }
    return commits;
  }

  /** Records that these commit points reached Kafka. */
  committed(commits: readonly Commit[]): void {
    for (const { partition, offset } of commits) {
      const state = this.partitions.get(partition);
      if (state) state.committed = offset;
    }
  }

  /** A new group generation: forget every partition. */
  reset(): void {
    this.partitions = new Map();
    this.generation++;
    this.retainedCount = 0;
  }
}
