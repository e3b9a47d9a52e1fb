/** The outbox on its own: one bad envelope does not hold back the rest of its batch. */
import { describe, expect, it } from "vitest";
import { Outbox } from "../../../src/app/dispatch/outbox.js";
import type { DispatchHotTier } from "../../../src/ports/dispatch-hot-tier.js";
import { noDispatchMetrics } from "../../../src/ports/dispatch-metrics.js";
import type { OutboundMessage, Publisher } from "../../../src/ports/publisher.js";
import { FakeClock } from "../../support/fake-clock.js";
import { armedTask } from "./armed-task.js";

describe("outbox", () => {
  it("drops and reports a task whose envelope cannot be built; the others are published", async () => {
    const clock = new FakeClock(1_000_000);
    const sent: OutboundMessage[] = [];
    const publisher: Publisher = {
      ensureTopics: async () => undefined,
      publish: async (messages) => {
        sent.push(...messages);
      },
      close: async () => undefined,
    };
    const hotTier = { ack: async () => undefined } as unknown as DispatchHotTier;
    const errors: string[] = [];
    const outbox = new Outbox(publisher, hotTier, clock, noDispatchMetrics, {
      nodeId: "me",
      maxInFlight: 1,
      maxBatchTasks: 500,
      maxBatchBytes: 512 * 1024,
      retryDelayMs: 10,
      onError: (_error, what) => errors.push(what),
    });
    const settled: string[] = [];
    let bothSettled!: () => void;
    const untilBothSettled = new Promise<void>((resolve) => {
      bothSettled = resolve;
    });
    for (const t of [armedTask("good", 1_000_000), armedTask("bad", Number.MAX_VALUE)]) {
      outbox.add({
        task: t,
        shard: 3,
        epoch: 7,
        stillHolds: () => true,
        settled: () => {
          settled.push(t.id);
          if (settled.length === 2) bothSettled();
        },
      });
    }
    // Each task settles once, published or dropped: no sleep, the test waits for both.
    await untilBothSettled;
    expect(sent.map((m) => JSON.parse(m.value).task_id)).toEqual(["good"]);
    expect(errors).toEqual(["envelope of task bad"]);
    expect(settled.sort()).toEqual(["bad", "good"]);
    expect(outbox.size).toBe(0);
  });
});
