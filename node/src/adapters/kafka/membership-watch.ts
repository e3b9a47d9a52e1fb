/**
 * Notices a consumer that its group no longer counts as a member while
 * kafkajs fetches on as if it were (docs/evidence.md, F2). How kafkajs gets
 * there (2.2.4, consumer/runner.js): a heartbeat answered UNKNOWN_MEMBER_ID
 * makes it forget its member id and rejoin; when that rejoin fails (a
 * connection reset, a broker away), its retry goes back to fetching without
 * rejoining, and a heartbeat without a member id is never sent. So it keeps
 * fetching the partitions it was last assigned, every commit is refused, it
 * never rejoins, and nothing crashes: the queue has one member fewer for
 * good while the worker reports it up.
 *
 * The sign to watch is the silence: a member heartbeats every fifth of its
 * session timeout. Once none has gone through (nor a join) for `graceMs`,
 * the consumer asks its group whether it is still listed; it is restarted
 * (stopped and started again, as after a crash) when the group is settled
 * without it at two checks `confirmMs` apart, with no sign of membership
 * between: a process resumed after a pause (SIGSTOP, a long GC) is silent
 * and missing too, until kafkajs's next heartbeat makes it rejoin by itself
 * (node/test/integration/worker-evicted.test.ts). A group in the middle of
 * a rebalance is left to finish it.
 */

/** What DescribeGroups says of a group (kafkajs' GroupDescription, the part used here). */
export interface GroupView {
  state: string;
  members: ReadonlyArray<{ memberId: string }>;
}

/** Group states in which a rejoin is under way: the member may be joining. */
const REBALANCING = new Set(["PreparingRebalance", "CompletingRebalance"]);

export type Membership = "member" | "gone" | "rebalancing";

export function membershipIn(group: GroupView, memberId: string | null): Membership {
  if (memberId !== null && group.members.some((m) => m.memberId === memberId)) return "member";
  return REBALANCING.has(group.state) ? "rebalancing" : "gone";
}

export class MembershipWatch {
  private lastSignMs: number;
  /** When a check first found the group settled without this member (null: not since the last sign). */
  private goneSinceMs: number | null = null;

  constructor(
    private readonly graceMs: number,
    private readonly confirmMs: number,
    nowMs: number,
  ) {
    this.lastSignMs = nowMs;
  }

  /** A heartbeat went through, or the consumer (re)joined, or the group listed it. */
  member(nowMs: number): void {
    this.lastSignMs = nowMs;
    this.goneSinceMs = null;
  }

  /** No sign of membership for longer than the grace: time to ask the group. */
  silent(nowMs: number): boolean {
    return nowMs - this.lastSignMs > this.graceMs;
  }

  /**
   * What the group said to a question asked at `askedMs`. True when the
   * consumer is to be restarted: settled without it now and at a check at
   * least `confirmMs` earlier, with no sign of membership since (an answer
   * overtaken by a heartbeat or a join is ignored).
   */
  answered(membership: Membership, askedMs: number, nowMs: number): boolean {
    if (this.lastSignMs > askedMs) return false;
    if (membership === "member") this.member(nowMs);
    if (membership !== "gone") {
      this.goneSinceMs = null;
      return false;
    }
    this.goneSinceMs ??= askedMs;
    return askedMs - this.goneSinceMs >= this.confirmMs;
  }
}
