/** The reconciler's steps are independent: Redis away must not stop the Postgres-only repairs. */
import { describe, expect, it } from "vitest";
import { Reconciler } from "../../../src/app/dispatch/reconciler.js";
import type { DispatchHotTier } from "../../../src/ports/dispatch-hot-tier.js";
import { noDispatchMetrics } from "../../../src/ports/dispatch-metrics.js";
import type { DispatchStore } from "../../../src/ports/dispatch-store.js";
import type { ExecutionStore } from "../../../src/ports/execution-store.js";
import { FakeClock } from "../../support/fake-clock.js";

describe("reconciler", () => {
  it("runs every step when Redis fails, then reports the failures", async () => {
    const redisDown = new Error("Connection is closed.");
    const hotTier = {
      returnExpired: async () => {
        throw redisDown;
      },
      rehydrate: async () => {
        throw redisDown;
      },
      addDue: async () => undefined,
    } as unknown as DispatchHotTier;
    const repairs: string[] = [];
    const store = {
      rearmStale: async () => {
        repairs.push("rearm");
        return 0;
      },
      scheduledBefore: async () => [],
    } as unknown as DispatchStore;
    const executions = {
      expireLeases: async () => {
        repairs.push("expire");
        return [];
      },
    } as unknown as ExecutionStore;
    const reconciler = new Reconciler(
      store,
      executions,
      hotTier,
      new FakeClock(),
      noDispatchMetrics,
      {
        dispatchTimeoutMs: 300_000,
        rehydrateAheadMs: 30_000,
        batchSize: 100,
      },
    );
    const failed = await reconciler.run().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failed).toBeInstanceOf(AggregateError);
    expect((failed as AggregateError).errors).toEqual([redisDown, redisDown]);
    expect(repairs).toEqual(["rearm", "expire"]);
  });
});
