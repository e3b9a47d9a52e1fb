import { describe, expect, it } from "vitest";
import { type LeaseListener, LeaseManager } from "../../../src/app/shared/leases.js";
import { noDispatchMetrics } from "../../../src/ports/dispatch-metrics.js";
import { FakeClock } from "../../support/fake-clock.js";
import { MemoryLeaseStore } from "./memory-lease-store.js";

const TTL_MS = 1000;
const MARGIN_MS = 200;

function node(id: string, store: MemoryLeaseStore, clock: FakeClock, wantLeader = false) {
  const events: string[] = [];
  const listener: LeaseListener = {
    acquired: (family, shard, epoch) => events.push(`+${family}:${shard}@${epoch}`),
    lost: (family, shard) => events.push(`-${family}:${shard}`),
    releasing: async (family, shard) => {
      events.push(`~${family}:${shard}`);
    },
  };
  const manager = new LeaseManager(store, clock, noDispatchMetrics, {
    nodeId: id,
    ttlMs: TTL_MS,
    safetyMarginMs: MARGIN_MS,
    families: ["shard"],
    wantLeader,
  }).subscribe(listener);
  return { manager, events };
}

/** Nodes a and b on one store, each after its first heartbeat (a first: it holds every shard). */
async function twoNodes() {
  const store = new MemoryLeaseStore();
  const clock = new FakeClock();
  const a = node("a", store, clock);
  const b = node("b", store, clock);
  await a.manager.heartbeat();
  await b.manager.heartbeat();
  return { store, clock, a, b };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("lease manager", () => {
  it("takes all 16 shards alone, each acquisition at a new epoch, and the leader lease", async () => {
    const store = new MemoryLeaseStore();
    const clock = new FakeClock();
    const a = node("a", store, clock, true);
    await a.manager.heartbeat();
    expect(a.manager.shards("shard")).toHaveLength(16);
    expect(a.manager.isLeader).toBe(true);
    expect(a.events[0]).toBe("+shard:0@1");
  });

  it("trusts a lease only until ttl minus the safety margin after the request was sent", async () => {
    const store = new MemoryLeaseStore();
    const clock = new FakeClock();
    const a = node("a", store, clock);
    await a.manager.heartbeat();
    clock.advance(TTL_MS - MARGIN_MS - 1);
    expect(a.manager.holdsShard("shard", 3)).toBe(true);
    clock.advance(1);
    expect(a.manager.holdsShard("shard", 3)).toBe(false);
  });

  it("a paused node loses its shards to the other, at a newer epoch, and learns it on resume", async () => {
    const store = new MemoryLeaseStore();
    const clock = new FakeClock();
    const a = node("a", store, clock);
    const b = node("b", store, clock);
    await a.manager.heartbeat();
    // a pauses: no heartbeat for longer than the TTL; b takes everything.
    clock.advance(TTL_MS + 1);
    await b.manager.heartbeat();
    expect(b.manager.shards("shard")).toHaveLength(16);
    expect(b.manager.epochOf("shard", 0)).toBe(2);
    expect(a.manager.holdsShard("shard", 0)).toBe(false);
    await a.manager.heartbeat(); // a resumes
    expect(a.events.filter((e) => e.startsWith("-"))).toHaveLength(16);
    expect(a.manager.shards("shard")).toHaveLength(0);
  });

  it("renewal refused (someone else acquired after expiry) means lost, even if the local clock still trusted it", async () => {
    const store = new MemoryLeaseStore();
    const clock = new FakeClock();
    const a = node("a", store, clock);
    await a.manager.heartbeat();
    store.rows.get("shard:5")!.expiresAtMs = 0; // as if it had expired in the database
    await store.acquire("shard:5", "intruder", TTL_MS, clock.nowMs());
    await a.manager.heartbeat();
    expect(a.events).toContain("-shard:5");
    expect(a.manager.holdsShard("shard", 5)).toBe(false);
  });

  it("two nodes converge to 8 and 8: the first releases (after draining) what the second then takes", async () => {
    const store = new MemoryLeaseStore();
    const clock = new FakeClock();
    const a = node("a", store, clock);
    const b = node("b", store, clock);
    await a.manager.heartbeat();
    await b.manager.heartbeat(); // b joins, finds nothing free
    expect(b.manager.shards("shard")).toHaveLength(0);
    clock.advance(100);
    await a.manager.heartbeat(); // a sees b, releases 8
    await settle();
    expect(a.manager.shards("shard")).toHaveLength(8);
    expect(a.events.filter((e) => e.startsWith("~"))).toHaveLength(8);
    clock.advance(100);
    await b.manager.heartbeat();
    expect(b.manager.shards("shard")).toHaveLength(8);
    expect(new Set([...a.manager.shards("shard"), ...b.manager.shards("shard")]).size).toBe(16);
  });

  it("a release that fails after the drain gives the lease up: it expires and is taken again, not renewed idle", async () => {
    const { store, clock, a } = await twoNodes();
    const release = store.release.bind(store);
    store.release = async () => {
      throw new Error("connection terminated");
    };
    clock.advance(100);
    await a.manager.heartbeat(); // a sees b, drains 8 shards, and cannot release them
    await settle();
    store.release = release;
    const drained = a.events.filter((e) => e.startsWith("~")).map((e) => e.slice(1));
    expect(drained).toHaveLength(8);
    expect(a.manager.shards("shard")).toHaveLength(8);
    for (const name of drained) expect(a.events).toContain(`-${name}`);
    // b goes away before taking them: a's share is all 16 again, and it takes them back under
    // new epochs once the unreleased rows expire, so a dispatcher acts for each again.
    for (let i = 0; i < 4; i++) {
      clock.advance(TTL_MS / 2);
      await a.manager.heartbeat();
    }
    expect(a.manager.shards("shard")).toHaveLength(16);
    for (const name of drained) expect(a.events).toContain(`+${name}@2`);
  });

  it("releaseAll drains and releases every lease so another node can take them at once", async () => {
    const store = new MemoryLeaseStore();
    const clock = new FakeClock();
    const a = node("a", store, clock, true);
    const b = node("b", store, clock, true);
    await a.manager.heartbeat();
    await a.manager.releaseAll();
    expect(a.manager.shards("shard")).toHaveLength(0);
    await b.manager.heartbeat();
    expect(b.manager.shards("shard")).toHaveLength(16);
    expect(b.manager.isLeader).toBe(true);
  });

  it("a heartbeat after releaseAll joins nothing again: the other node takes every shard at once", async () => {
    const { store, clock, a, b } = await twoNodes();
    clock.advance(100);
    await a.manager.heartbeat();
    await settle();
    await b.manager.heartbeat();
    await a.manager.releaseAll();
    await a.manager.heartbeat(); // its heartbeat loop is stopped only after releaseAll
    expect(store.rows.get("node:shard:a")!.expiresAtMs).toBeLessThanOrEqual(clock.nowMs());
    clock.advance(100);
    await b.manager.heartbeat();
    expect(b.manager.shards("shard")).toHaveLength(16);
  });

  it("deletes the membership row of a node that stopped, never a shard lease", async () => {
    const { store, clock, a } = await twoNodes();
    expect(store.rows.has("node:shard:b")).toBe(true);
    // b dies without releasing; a keeps beating past b's expiry.
    for (let i = 0; i < 3; i++) {
      clock.advance(TTL_MS / 2);
      await a.manager.heartbeat();
    }
    expect(store.rows.has("node:shard:b")).toBe(false);
    expect(store.rows.has("node:shard:a")).toBe(true);
    expect([...store.rows.keys()].filter((n) => n.startsWith("shard:"))).toHaveLength(16);
    expect(a.manager.shards("shard")).toHaveLength(16);
  });
});
