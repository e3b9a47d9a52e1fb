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
 * without it. A group in the middle of a rebalance is left to finish it.
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

  constructor(
    private readonly graceMs: number,
    nowMs: number,
  ) {
    this.lastSignMs = nowMs;
  }

  /** A heartbeat went through, or the consumer (re)joined, or the group listed it. */
  member(nowMs: number): void {
    this.lastSignMs = nowMs;
  }

  /** No sign of membership for longer than the grace: time to ask the group. */
  silent(nowMs: number): boolean {
    return nowMs - this.lastSignMs > this.graceMs;
  }
}
