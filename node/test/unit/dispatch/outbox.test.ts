/**
 * The outbox on its own: one bad envelope does not hold back the rest of its
 * batch, and an envelope the broker can never accept is buried (DEAD,
 * undeliverable) once rather than retried for ever; with a linger, tasks
 * fired a little apart leave in one request; a transport in memory gets the
 * envelope without its text.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it, vi } from "vitest";
import { MemoryTransport } from "../../../src/adapters/memory/memory-transport.js";
import { BUSY_REQUEST_TASKS, Outbox } from "../../../src/app/dispatch/outbox.js";
import type { ArmedTask } from "../../../src/domain/envelope.js";
import { ChronofenceError, ErrorCode } from "../../../src/domain/errors.js";
import { envelopeOf, parseEnvelope } from "../../../src/domain/inbound-envelope.js";
import type { DispatchHotTier } from "../../../src/ports/dispatch-hot-tier.js";
import { noDispatchMetrics } from "../../../src/ports/dispatch-metrics.js";
import type { Claim } from "../../../src/ports/dispatch-store.js";
import type { ExecutionFailure } from "../../../src/ports/execution-store.js";
import type { OutboundMessage, Publisher } from "../../../src/ports/publisher.js";
import type { Message } from "../../../src/ports/transport.js";
import { FakeClock } from "../../support/fake-clock.js";
import { armedTask } from "./armed-task.js";

const MAX_MESSAGE_BYTES = 4096;

/** A broker that refuses any request holding a message over `brokerLimitBytes`, and counts requests. */
function harness(
  brokerLimitBytes = Number.POSITIVE_INFINITY,
  lingerMs = 0,
  maxBatchTasks = 500,
  transport?: Publisher,
  busyLingerMs = lingerMs,
) {
  const clock = new FakeClock(1_000_000);
  const sent: OutboundMessage[] = [];
  const state = { requests: 0, refusals: 0 };
  const publisher: Publisher = transport ?? {
    ensureTopics: async () => undefined,
    publish: async (messages) => {
      state.requests++;
      if (messages.some((m) => Buffer.byteLength(m.value) > brokerLimitBytes)) {
        state.refusals++;
        throw new ChronofenceError(ErrorCode.PayloadTooLarge, "MESSAGE_TOO_LARGE");
      }
      sent.push(...messages);
    },
    close: async () => undefined,
  };
  const acked: string[] = [];
  const hotTier = {
    ack: async (byShard: ReadonlyMap<number, readonly Claim[]>) => {
      for (const claims of byShard.values()) acked.push(...claims.map((c) => c.taskId));
    },
    addDue: async () => undefined,
  } as unknown as DispatchHotTier;
  const buried: Array<{ ids: string[]; failure: ExecutionFailure }> = [];
  const undeliverable = {
    bury: async (tasks: readonly ArmedTask[], failure: ExecutionFailure) => {
      buried.push({ ids: tasks.map((t) => t.id), failure });
      return { buried: tasks.map((t) => t.id), released: [] };
    },
  };
  const counted = { undeliverable: 0 };
  const metrics = {
    ...noDispatchMetrics,
    undeliverable: (n: number) => {
      counted.undeliverable += n;
    },
  };
  const errors: string[] = [];
  const outbox = new Outbox(publisher, undeliverable, hotTier, clock, metrics, {
    nodeId: "me",
    maxInFlight: 1,
    maxBatchTasks,
    maxBatchBytes: 512 * 1024,
    maxMessageBytes: MAX_MESSAGE_BYTES,
    retryDelayMs: 10,
    lingerMs,
    busyLingerMs,
    onError: (_error: unknown, what: string) => errors.push(what),
  });
  const settled: string[] = [];
  /** Resolves once every task added settles (published, buried or dropped): no sleep. */
  const add = (...tasks: ArmedTask[]) =>
    Promise.all(
      tasks.map(
        (task) =>
          new Promise<void>((resolve) =>
            outbox.add({
              task,
              shard: 3,
              epoch: 7,
              stillHolds: () => true,
              settled: () => {
                settled.push(task.id);
                resolve();
              },
            }),
          ),
      ),
    );
  return { outbox, add, sent, state, acked, buried, counted, errors, settled };
}

const withPayload = (id: string, bytes: number): ArmedTask => ({
  ...armedTask(id, 1_000_000),
  payloadJson: JSON.stringify("x".repeat(bytes)),
});

const idsOf = (messages: OutboundMessage[]) => messages.map((m) => JSON.parse(m.value).task_id);

describe("outbox", () => {
  it("drops and reports a task whose envelope cannot be built; the others are published", async () => {
    const h = harness();
    await h.add(armedTask("good", 1_000_000), armedTask("bad", Number.MAX_VALUE));
    expect(idsOf(h.sent)).toEqual(["good"]);
    expect(h.errors).toEqual(["envelope of task bad"]);
    expect(h.settled.sort()).toEqual(["bad", "good"]);
    expect(h.outbox.size).toBe(0);
  });

  it("hands an envelope to a transport in memory without writing its text; what it says is the text's", async () => {
    const transport = new MemoryTransport();
    const h = harness(Number.POSITIVE_INFINITY, 0, 500, transport.publisher());
    const task = { ...armedTask(randomUUID(), 1_000_000), tenantId: randomUUID() };
    await h.add(task);
    const received: Message[] = [];
    const consumer = transport.consumer({
      kind: task.priority,
      clientId: "outbox-test",
      maxInFlight: 10,
      maxWaiting: 10,
      maxRetained: 10,
      onError: () => undefined,
    });
    await consumer.start(async (message) => {
      received.push(message);
      return true;
    });
    await vi.waitFor(() => expect(received).toHaveLength(1));
    const [message] = received as [Message & { text?: string }];
    expect(message.text).toBeUndefined(); // never built
    expect(message.source?.task).toBe(task);
    expect(parseEnvelope(message.value)).toEqual(envelopeOf(message.source!));
    await consumer.stop();
  });

  it("sends a wake's tasks before the loop turns, but a backlog one request per turn", async () => {
    const h = harness(Number.POSITIVE_INFINITY, 0, 2);
    const ids = ["a", "b", "c", "d", "e", "f"];
    let sentBeforeTheTurn = -1;
    const counted = new Promise<void>((resolve) =>
      setImmediate(() => {
        sentBeforeTheTurn = h.sent.length;
        resolve();
      }),
    );
    const all = h.add(...ids.map((id) => armedTask(id, 1_000_000)));
    await Promise.resolve();
    await Promise.resolve();
    expect(idsOf(h.sent)).toEqual(["a", "b"]); // no turn of the loop needed for the first request
    await counted;
    expect(sentBeforeTheTurn).toBeLessThan(ids.length); // the rest waited for turns of the loop
    await all;
    expect(idsOf(h.sent)).toEqual(ids);
  });

  it("buries an envelope over maxMessageBytes without sending it; the rest of the batch is published", async () => {
    const h = harness();
    await h.add(withPayload("a", 10), withPayload("huge", MAX_MESSAGE_BYTES), withPayload("b", 10));
    expect(idsOf(h.sent)).toEqual(["a", "b"]);
    expect(h.buried).toEqual([
      {
        ids: ["huge"],
        failure: expect.objectContaining({ code: "message_too_large", retryable: false }),
      },
    ]);
    expect(h.counted.undeliverable).toBe(1);
    expect(h.acked).toEqual([]); // the claims wait for the next claim round
    expect(h.outbox.acks.size).toBe(3);
    await h.outbox.acks.flush();
    expect(h.acked.sort()).toEqual(["a", "b", "huge"]);
    expect(h.settled.sort()).toEqual(["a", "b", "huge"]);
    expect(h.outbox.size).toBe(0);
  });

  it("splits a batch the broker refuses as too large and buries only the refused envelope, with no retry loop", async () => {
    const h = harness(2000); // the broker's limit is below ours
    const tasks = ["t0", "t1", "t2", "t3", "t4", "t5", "t6"].map((id) => withPayload(id, 10));
    tasks.splice(4, 0, withPayload("big", 3000));
    await h.add(...tasks);
    expect(idsOf(h.sent).sort()).toEqual(["t0", "t1", "t2", "t3", "t4", "t5", "t6"]);
    expect(h.buried.map((b) => b.ids)).toEqual([["big"]]);
    expect(h.errors.filter((e) => e === "publish")).toEqual([]); // never retried as a failure
    expect(h.state.refusals).toBeLessThanOrEqual(4); // halves down to the culprit: log2(8) + 1
    // Absence of a retry loop: five retry delays later, still no more requests.
    await new Promise((resolve) => setTimeout(resolve, 5 * 10));
    expect(h.state.requests).toBeLessThanOrEqual(8);
    expect(h.outbox.size).toBe(0);
  });

  it("sends tasks fired within the linger in one request, and without one in a request each", async () => {
    const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    for (const [lingerMs, requests] of [
      [40, 1],
      [0, 2],
    ] as const) {
      const h = harness(Number.POSITIVE_INFINITY, lingerMs);
      const first = h.add(armedTask(`a${lingerMs}`, 1_000_000));
      await later(10);
      await Promise.all([first, h.add(armedTask(`b${lingerMs}`, 1_000_000))]);
      expect(h.state.requests).toBe(requests);
      expect(idsOf(h.sent)).toEqual([`a${lingerMs}`, `b${lingerMs}`]);
    }
  });

  it("lingers longer once a request was busy, and as before once the load is light again", async () => {
    const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    for (const [burst, requests] of [
      [BUSY_REQUEST_TASKS, 2], // busy: the two stragglers wait for each other
      [BUSY_REQUEST_TASKS - 1, 3], // light: each leaves after the short linger
    ] as const) {
      const h = harness(Number.POSITIVE_INFINITY, 1, 500, undefined, 40);
      const tasks = Array.from({ length: burst }, (_, i) => armedTask(`t${burst}-${i}`, 1_000_000));
      await h.add(...tasks);
      const first = h.add(armedTask(`a${burst}`, 1_000_000));
      await later(10);
      await Promise.all([first, h.add(armedTask(`b${burst}`, 1_000_000))]);
      expect(h.state.requests).toBe(requests);
      expect(idsOf(h.sent).slice(-2)).toEqual([`a${burst}`, `b${burst}`]);
      // That request carried two: light again, so the next task leaves after the short linger.
      void h.add(armedTask(`c${burst}`, 1_000_000));
      await later(5);
      expect(h.state.requests).toBe(requests + 1);
    }
  });

  it("does not wait under load either when it does not linger at all", async () => {
    const h = harness(Number.POSITIVE_INFINITY, 0, 500, undefined, 10_000);
    await h.add(
      ...Array.from({ length: BUSY_REQUEST_TASKS }, (_, i) => armedTask(`t${i}`, 1_000_000)),
    );
    void h.add(armedTask("next", 1_000_000));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(h.state.requests).toBe(2);
  });
});
