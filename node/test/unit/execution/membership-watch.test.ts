/**
 * When a Kafka consumer asks its group whether it still belongs to it
 * (adapters/kafka/membership-watch.ts): once no heartbeat or join has gone
 * through for longer than the grace; what the group's answer means — a
 * member listed, a rebalance to wait for, or a settled group without it —
 * and that only a second "gone", a while after the first and with no sign of
 * membership between, restarts the consumer.
 */
import { describe, expect, it } from "vitest";
import { MembershipWatch, membershipIn } from "../../../src/adapters/kafka/membership-watch.js";

describe("the membership watch", () => {
  it("is silent once no sign of membership has come for longer than the grace", () => {
    const watch = new MembershipWatch(12_000, 3_000, 1_000);
    expect(watch.silent(13_000)).toBe(false);
    expect(watch.silent(13_001)).toBe(true);
  });

  it("starts again at each heartbeat or join", () => {
    const watch = new MembershipWatch(12_000, 3_000, 0);
    watch.member(10_000);
    expect(watch.silent(20_000)).toBe(false);
    expect(watch.silent(22_001)).toBe(true);
  });

  it("restarts only at a second 'gone', at least confirmMs after the first", () => {
    const watch = new MembershipWatch(12_000, 3_000, 0);
    expect(watch.answered("gone", 13_000, 13_010)).toBe(false);
    expect(watch.answered("gone", 15_000, 15_010)).toBe(false);
    expect(watch.answered("gone", 16_000, 16_010)).toBe(true);
  });

  it("forgets a 'gone' once the consumer heartbeats or joins, or the group rebalances", () => {
    const watch = new MembershipWatch(12_000, 3_000, 0);
    watch.answered("gone", 13_000, 13_010);
    watch.member(14_000); // kafkajs rejoined by itself (a process resumed after a pause)
    expect(watch.answered("gone", 30_000, 30_010)).toBe(false);
    watch.answered("rebalancing", 33_000, 33_010);
    expect(watch.answered("gone", 36_000, 36_010)).toBe(false);
    expect(watch.answered("gone", 39_000, 39_010)).toBe(true);
  });

  it("ignores an answer that a heartbeat or join overtook", () => {
    const watch = new MembershipWatch(12_000, 3_000, 0);
    watch.answered("gone", 13_000, 13_010);
    watch.member(16_005); // joined while the second question was on its way
    expect(watch.answered("gone", 16_000, 16_010)).toBe(false);
  });

  it("counts a listed member as a sign", () => {
    const watch = new MembershipWatch(12_000, 3_000, 0);
    expect(watch.answered("member", 13_000, 13_010)).toBe(false);
    expect(watch.silent(25_010)).toBe(false);
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
