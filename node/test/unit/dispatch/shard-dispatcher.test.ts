/** The dispatcher's claim rounds against fakes driven by a fake clock: batching, never early, fencing, cancels. */
import { describe, expect, it } from "vitest";
import { Dispatcher } from "../../../src/app/dispatch/dispatcher.js";
import { Outbox } from "../../../src/app/dispatch/outbox.js";
import type { ClaimBatch, DispatchHotTier } from "../../../src/ports/dispatch-hot-tier.js";
import { noDispatchMetrics } from "../../../src/ports/dispatch-metrics.js";
import type {
  ArmBatch,
  ArmResult,
  Claim,
  DispatchStore,
} from "../../../src/ports/dispatch-store.js";
import type { PreciseTimers } from "../../../src/ports/precise-timers.js";
import type { OutboundMessage, Publisher } from "../../../src/ports/publisher.js";
import { FakeClock } from "../../support/fake-clock.js";
import { armedTask } from "./armed-task.js";

class FakeTimers implements PreciseTimers {
  private timers: Array<{ atMs: number; callback: () => void; live: boolean }> = [];
  constructor(private readonly clock: FakeClock) {}
  at(epochMs: number, callback: () => void) {
    const timer = { atMs: epochMs, callback, live: true };
    this.timers.push(timer);
    return {
      cancel: () => {
        const was = timer.live;
        timer.live = false;
        return was;
      },
    };
  }
  get size() {
    return this.timers.filter((t) => t.live).length;
  }
  close() {}
  /** Fires what is due by the clock, in due order. */
  fireDue() {
    const due = this.timers
      .filter((t) => t.live && t.atMs <= this.clock.nowMs())
      .sort((a, b) => a.atMs - b.atMs);
    for (const t of due) {
      t.live = false;
      t.callback();
    }
  }
}

/** Shard 3 at epoch 7 is ours (unless `shards` says more); tasks are due in shard 3 unless keyed `<shard>/id`. */
function setup(
  options: {
    staleShards?: number[];
    shards?: number[];
    /** Claims the arm finds no longer SCHEDULED (cancelled, already armed). */
    unarmable?: string[];
    failAcks?: boolean;
  } = {},
) {
  const clock = new FakeClock(1_000_000);
  const due = new Map<string, number>();
  const cancels: string[] = [];
  const armCalls: ArmBatch[][] = [];
  const givenBack: Claim[] = [];
  const acked: string[] = [];
  const sent: OutboundMessage[] = [];
  const lost: number[] = [];
  const staleRejected: Array<[number, number, string]> = [];
  const metrics = {
    ...noDispatchMetrics,
    staleEpochRejected: (shard: number, claims: number, where: string) => {
      staleRejected.push([shard, claims, where]);
    },
  };
  let holds = true;
  const shardOfId = (id: string) => (id.includes("/") ? Number(id.split("/")[0]) : 3);
  const hotTier: DispatchHotTier = {
    async claim(requests, nowMs, lookaheadMs): Promise<ClaimBatch[]> {
      return requests.map(({ shard, limit }) => {
        const claims = [...due]
          .filter(([id, at]) => shardOfId(id) === shard && at <= nowMs + lookaheadMs)
          .slice(0, limit)
          .map(([taskId, runAtMs]) => ({ taskId, runAtMs }));
        for (const c of claims) due.delete(c.taskId);
        return { claims, cancelled: shard === 3 ? cancels.splice(0) : [] };
      });
    },
    ack: async (byShard) => {
      if (options.failAcks) throw new Error("Command timed out");
      for (const claims of byShard.values()) acked.push(...claims.map((c) => c.taskId));
    },
    giveBack: async (_shard, claims) => {
      givenBack.push(...claims);
      return claims.length;
    },
    returnExpired: async () => 0,
    rehydrate: async () => 0,
    addDue: async () => undefined,
    contentEpochs: async (shards, candidate) => shards.map(() => candidate),
  };
  const store: DispatchStore = {
    async arm(batches: readonly ArmBatch[]): Promise<ArmResult[]> {
      armCalls.push(batches.map((b) => ({ fence: b.fence, claims: [...b.claims] })));
      return batches.map(({ fence, claims }) =>
        options.staleShards?.includes(fence.shard)
          ? { fenced: false, armed: [] }
          : {
              fenced: true,
              armed: claims
                .filter((c) => !options.unarmable?.includes(c.taskId))
                .map((c) => armedTask(c.taskId, c.runAtMs)),
            },
      );
    },
    scheduledBefore: async () => [],
    rearmStale: async () => 0,
  };
  const publisher: Publisher = {
    ensureTopics: async () => undefined,
    publish: async (messages) => {
      sent.push(...messages);
    },
    close: async () => undefined,
  };
  const timers = new FakeTimers(clock);
  const undeliverable = { bury: async () => ({ buried: [], released: [] }) };
  const outbox = new Outbox(publisher, undeliverable, hotTier, clock, noDispatchMetrics, {
    nodeId: "me",
    maxInFlight: 2,
    maxBatchTasks: 500,
    maxBatchBytes: 512 * 1024,
    maxMessageBytes: 1_000_000,
    retryDelayMs: 10,
    onError: () => undefined,
  });
  const dispatcher = new Dispatcher(
    {
      store,
      hotTier,
      outbox,
      clock,
      metrics,
      timers,
      holdsShard: () => holds,
      expireShard: (shard) => {
        lost.push(shard);
        dispatcher.lost(shard);
      },
      onError: () => undefined,
    },
    {
      nodeId: "me",
      claimIntervalMs: 100,
      claimLookaheadMs: 1000,
      claimTtlMs: 60_000,
      claimBatchSize: 100,
      roundGroups: 1,
      drainTimeoutMs: 60_000,
    },
  );
  for (const shard of options.shards ?? [3]) dispatcher.acquired(shard, 7);
  return {
    clock,
    due,
    cancels,
    armCalls,
    givenBack,
    acked,
    sent,
    timers,
    dispatcher,
    lost: () => lost,
    staleRejected,
    loseLease: () => {
      holds = false;
    },
    /** Moves the clock on, fires what fell due and lets the outbox send it. */
    elapse: async (ms: number) => {
      clock.advance(ms);
      timers.fireDue();
      await flushed();
    },
  };
}

const flushed = () => new Promise((resolve) => setImmediate(resolve));
const taskIdsOf = (sent: OutboundMessage[]) => sent.map((m) => JSON.parse(m.value).task_id);

describe("shard dispatcher", () => {
  it("arms a whole claim batch in one fenced call and publishes each task at its run_at, not before", async () => {
    const s = setup();
    for (let i = 0; i < 5; i++) s.due.set(`t${i}`, s.clock.nowMs() + 200 + i * 100);
    s.due.set("later", s.clock.nowMs() + 5000);
    await s.dispatcher.round();
    expect(s.armCalls).toHaveLength(1);
    expect(s.armCalls[0]!.map((b) => b.fence)).toEqual([{ shard: 3, owner: "me", epoch: 7 }]);
    expect(s.armCalls[0]![0]!.claims.map((c) => c.taskId)).toEqual(["t0", "t1", "t2", "t3", "t4"]);
    s.clock.advance(199);
    s.timers.fireDue();
    await flushed();
    expect(s.sent).toHaveLength(0);
    s.clock.advance(1);
    s.timers.fireDue();
    await flushed();
    expect(taskIdsOf(s.sent)).toEqual(["t0"]);
    s.clock.advance(400);
    s.timers.fireDue();
    await flushed();
    expect(taskIdsOf(s.sent)).toEqual(["t0", "t1", "t2", "t3", "t4"]);
    expect(JSON.parse(s.sent[0]!.value)).toMatchObject({
      dispatcher: "me",
      shard: 3,
      shard_epoch: 7,
    });
  });

  it("a stale fence arms nothing: the claims go back and the lease counts as lost", async () => {
    const s = setup({ staleShards: [3] });
    s.due.set("t0", s.clock.nowMs() + 100);
    await s.dispatcher.round();
    expect(s.givenBack.map((c) => c.taskId)).toEqual(["t0"]);
    expect(s.lost()).toEqual([3]);
    expect(s.staleRejected).toEqual([[3, 1, "db"]]);
    expect(s.timers.size).toBe(0);
  });

  it("claims every owned shard in one round and arms them in one call, each under its own fence", async () => {
    const s = setup({ shards: [3, 5], staleShards: [5] });
    s.due.set("3/a", s.clock.nowMs() + 100);
    s.due.set("5/b", s.clock.nowMs() + 100);
    expect(await s.dispatcher.round()).toBe(false);
    expect(s.armCalls).toHaveLength(1);
    expect(s.armCalls[0]!.map((b) => [b.fence.shard, b.claims.map((c) => c.taskId)])).toEqual([
      [3, ["3/a"]],
      [5, ["5/b"]],
    ]);
    // Shard 5's fence refused: its claim goes back and it is let go; shard 3's task still fires.
    expect(s.givenBack.map((c) => c.taskId)).toEqual(["5/b"]);
    expect(s.lost()).toEqual([5]);
    expect(s.staleRejected).toEqual([[5, 1, "db"]]);
    expect([...s.dispatcher.heldBy()]).toEqual([[3, 1]]);
    s.clock.advance(100);
    s.timers.fireDue();
    await flushed();
    expect(taskIdsOf(s.sent)).toEqual(["3/a"]);
  });

  it("a failed ack of the claims the arm refused still loads what it armed", async () => {
    const s = setup({ unarmable: ["gone"], failAcks: true });
    s.due.set("t0", s.clock.nowMs() + 100);
    s.due.set("gone", s.clock.nowMs() + 100);
    await expect(s.dispatcher.round()).rejects.toThrow("Command timed out");
    s.clock.advance(100);
    s.timers.fireDue();
    await flushed();
    expect(taskIdsOf(s.sent)).toEqual(["t0"]);
  });

  it("forgets the claims of published tasks with the next round, and the rest at shutdown", async () => {
    const s = setup();
    s.due.set("t0", s.clock.nowMs() + 100);
    s.due.set("t1", s.clock.nowMs() + 300);
    await s.dispatcher.round();
    await s.elapse(100);
    expect(taskIdsOf(s.sent)).toEqual(["t0"]);
    expect(s.acked).toEqual([]);
    await s.dispatcher.round();
    expect(s.acked).toEqual(["t0"]);
    await s.elapse(200);
    await s.dispatcher.stopAll();
    expect(s.acked).toEqual(["t0", "t1"]);
  });

  it("sends no pending ack of a shard it no longer holds: its new owner may have claimed the same members", async () => {
    const s = setup();
    s.due.set("t0", s.clock.nowMs() + 100);
    await s.dispatcher.round();
    await s.elapse(100);
    expect(taskIdsOf(s.sent)).toEqual(["t0"]);
    s.loseLease();
    await s.dispatcher.round();
    await s.dispatcher.stopAll();
    expect(s.acked).toEqual([]);
  });

  it("a full claim asks for another round at once", async () => {
    const s = setup({ shards: [3, 5] });
    for (let i = 0; i < 60; i++) s.due.set(`3/t${i}`, s.clock.nowMs() + 100);
    expect(await s.dispatcher.round()).toBe(true); // 100 per round over 2 shards: 50 each
    expect(s.armCalls[0]![0]!.claims).toHaveLength(50);
    expect(await s.dispatcher.round()).toBe(false);
    expect(s.armCalls[1]![0]!.claims).toHaveLength(10);
  });

  it("publishes nothing once the lease is no longer valid locally", async () => {
    const s = setup();
    s.due.set("t0", s.clock.nowMs() + 100);
    await s.dispatcher.round();
    s.loseLease();
    s.clock.advance(100);
    s.timers.fireDue();
    await flushed();
    expect(s.sent).toHaveLength(0);
    expect(s.lost()).toEqual([3]);
    await s.dispatcher.stopAll();
    expect(s.givenBack.map((c) => c.taskId)).toEqual(["t0"]);
  });

  it("claims nothing for a shard whose lease is invalid locally", async () => {
    const s = setup();
    s.loseLease();
    s.due.set("t0", s.clock.nowMs() + 100);
    expect(await s.dispatcher.round()).toBe(false);
    expect(s.armCalls).toHaveLength(0);
    expect(s.due.has("t0")).toBe(true);
  });

  it("drops a cancelled task from the wheel", async () => {
    const s = setup();
    s.due.set("keep", s.clock.nowMs() + 300);
    s.due.set("drop", s.clock.nowMs() + 300);
    await s.dispatcher.round();
    s.cancels.push("drop");
    await s.dispatcher.round();
    s.clock.advance(300);
    s.timers.fireDue();
    await flushed();
    expect(taskIdsOf(s.sent)).toEqual(["keep"]);
  });

  it("drain resolves once everything held is published", async () => {
    const s = setup();
    s.due.set("t0", s.clock.nowMs() + 50);
    await s.dispatcher.round();
    let drained = false;
    const drain = s.dispatcher.releasing(3).then(() => {
      drained = true;
    });
    await flushed();
    expect(drained).toBe(false);
    s.clock.advance(50);
    s.timers.fireDue();
    await drain;
    expect(taskIdsOf(s.sent)).toEqual(["t0"]);
  });
});
