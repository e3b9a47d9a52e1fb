/** The dispatcher loop of one shard against fakes driven by a fake clock: batching, never early, fencing, cancels. */
import { describe, expect, it } from "vitest";
import { Outbox } from "../../../src/app/dispatch/outbox.js";
import { ShardDispatcher } from "../../../src/app/dispatch/shard-dispatcher.js";
import type { ArmedTask } from "../../../src/domain/envelope.js";
import type { ClaimBatch, DispatchHotTier } from "../../../src/ports/dispatch-hot-tier.js";
import { noDispatchMetrics } from "../../../src/ports/dispatch-metrics.js";
import type {
  ArmResult,
  Claim,
  DispatchStore,
  ShardFence,
} from "../../../src/ports/dispatch-store.js";
import type { PreciseTimers } from "../../../src/ports/precise-timers.js";
import type { OutboundMessage, Publisher } from "../../../src/ports/publisher.js";
import { FakeClock } from "../../support/fake-clock.js";

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

function armedTask(id: string, runAtMs: number): ArmedTask {
  return {
    id,
    tenantId: "t",
    type: "x",
    payloadJson: "null",
    priority: "standard",
    runAtMs,
    attempt: 0,
    fencingToken: "1",
    timeoutMs: 1000,
    idempotencyKey: null,
    workflowId: null,
    graceMs: 5000,
  };
}

function setup(options: { fenced?: boolean } = {}) {
  const clock = new FakeClock(1_000_000);
  const due = new Map<string, number>();
  const cancels: string[] = [];
  const armCalls: Claim[][] = [];
  const givenBack: Claim[] = [];
  const sent: OutboundMessage[] = [];
  let lost = 0;
  let holds = true;
  const hotTier: DispatchHotTier = {
    async claim(_shard, nowMs, lookaheadMs): Promise<ClaimBatch> {
      const claims = [...due]
        .filter(([, at]) => at <= nowMs + lookaheadMs)
        .map(([taskId, runAtMs]) => ({ taskId, runAtMs }));
      for (const c of claims) due.delete(c.taskId);
      return { claims, cancelled: cancels.splice(0) };
    },
    ack: async () => undefined,
    giveBack: async (_shard, claims) => {
      givenBack.push(...claims);
      return claims.length;
    },
    returnExpired: async () => 0,
    rehydrate: async () => 0,
    addDue: async () => undefined,
  };
  const store: DispatchStore = {
    async arm(_fence: ShardFence, claims: readonly Claim[]): Promise<ArmResult> {
      armCalls.push([...claims]);
      if (options.fenced === false) return { fenced: false, armed: [] };
      return { fenced: true, armed: claims.map((c) => armedTask(c.taskId, c.runAtMs)) };
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
  const outbox = new Outbox(publisher, hotTier, clock, noDispatchMetrics, {
    nodeId: "me",
    maxInFlight: 2,
    maxBatchTasks: 500,
    maxBatchBytes: 512 * 1024,
    retryDelayMs: 10,
    onError: () => undefined,
  });
  const dispatcher = new ShardDispatcher(
    3,
    7,
    {
      store,
      hotTier,
      outbox,
      clock,
      metrics: noDispatchMetrics,
      timers,
      holds: () => holds,
      lost: () => {
        lost++;
      },
    },
    { nodeId: "me", claimLookaheadMs: 1000, claimTtlMs: 60_000, claimBatchSize: 100 },
  );
  return {
    clock,
    due,
    cancels,
    armCalls,
    givenBack,
    sent,
    timers,
    dispatcher,
    lost: () => lost,
    loseLease: () => {
      holds = false;
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
    await s.dispatcher.tick();
    expect(s.armCalls).toHaveLength(1);
    expect(s.armCalls[0]!.map((c) => c.taskId)).toEqual(["t0", "t1", "t2", "t3", "t4"]);
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
    const headers = s.sent[0]!.headers;
    expect(headers).toMatchObject({
      "cf-dispatcher": "me",
      "cf-shard": "3",
      "cf-shard-epoch": "7",
    });
  });

  it("a stale fence arms nothing: the claims go back and the lease counts as lost", async () => {
    const s = setup({ fenced: false });
    s.due.set("t0", s.clock.nowMs() + 100);
    await s.dispatcher.tick();
    expect(s.givenBack.map((c) => c.taskId)).toEqual(["t0"]);
    expect(s.lost()).toBe(1);
    expect(s.timers.size).toBe(0);
  });

  it("publishes nothing once the lease is no longer valid locally", async () => {
    const s = setup();
    s.due.set("t0", s.clock.nowMs() + 100);
    await s.dispatcher.tick();
    s.loseLease();
    s.clock.advance(100);
    s.timers.fireDue();
    await flushed();
    expect(s.sent).toHaveLength(0);
    expect(s.lost()).toBe(1);
    await s.dispatcher.stop();
    expect(s.givenBack.map((c) => c.taskId)).toEqual(["t0"]);
  });

  it("drops a cancelled task from the wheel", async () => {
    const s = setup();
    s.due.set("keep", s.clock.nowMs() + 300);
    s.due.set("drop", s.clock.nowMs() + 300);
    await s.dispatcher.tick();
    s.cancels.push("drop");
    await s.dispatcher.tick();
    s.clock.advance(300);
    s.timers.fireDue();
    await flushed();
    expect(taskIdsOf(s.sent)).toEqual(["keep"]);
  });

  it("drain resolves once everything held is published", async () => {
    const s = setup();
    s.due.set("t0", s.clock.nowMs() + 50);
    await s.dispatcher.tick();
    let drained = false;
    const drain = s.dispatcher.drain().then(() => {
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
