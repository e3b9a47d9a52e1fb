/**
 * When a Kafka consumer asks its group whether it still belongs to it
 * (adapters/kafka/membership-watch.ts): once no heartbeat or join has gone
 * through for longer than the grace; and what the group's answer means — a
 * member listed, a rebalance to wait for, or a settled group without it.
 */
import { describe, expect, it } from "vitest";
import { MembershipWatch, membershipIn } from "../../../src/adapters/kafka/membership-watch.js";

describe("the membership watch", () => {
  it("is silent once no sign of membership has come for longer than the grace", () => {
    const watch = new MembershipWatch(12_000, 1_000);
    expect(watch.silent(13_000)).toBe(false);
    expect(watch.silent(13_001)).toBe(true);
  });

  it("starts again at each heartbeat or join", () => {
    const watch = new MembershipWatch(12_000, 0);
    watch.member(10_000);
    expect(watch.silent(20_000)).toBe(false);
    expect(watch.silent(22_001)).toBe(true);
  });
});

describe("what the group says of the member", () => {
  const group = (state: string, ...ids: string[]) => ({
    state,
    members: ids.map((memberId) => ({ memberId })),
  });

  it("is a member when listed, whatever the state", () => {
    expect(membershipIn(group("Stable", "a", "me"), "me")).toBe("member");
    expect(membershipIn(group("PreparingRebalance", "me"), "me")).toBe("member");
  });

  it("is gone from a settled or empty group that does not list it", () => {
    expect(membershipIn(group("Stable", "a", "b"), "me")).toBe("gone");
    expect(membershipIn(group("Empty"), "me")).toBe("gone");
    expect(membershipIn(group("Dead"), "me")).toBe("gone");
    expect(membershipIn(group("Stable", "a"), null)).toBe("gone");
  });

  it("waits while the group rebalances: the member may be joining", () => {
    expect(membershipIn(group("PreparingRebalance", "a"), "me")).toBe("rebalancing");
    expect(membershipIn(group("CompletingRebalance", "a"), "me")).toBe("rebalancing");
  });
});
