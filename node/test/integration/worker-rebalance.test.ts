/**
 * A worker whose slots are all held by long tasks still lets its group
 * rebalance: the consumer waiting for room gives up when a heartbeat says a
 * rebalance began, so a second worker joining is not kept waiting until the
 * long tasks end (kafkajs' rebalance timeout, a minute, would expel the
 * first worker instead).
 */
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { systemClock } from "../../src/adapters/clock/system-clock.js";
import { type RunningWorker, startWorker } from "../../src/main/worker.js";
import type { HandlerRegistry } from "../../src/ports/handler.js";
import { submitTask } from "./support/api.js";
import { requireKafka } from "./support/kafka.js";
import { type Pipeline, startPipeline } from "./support/pipeline.js";
import { withPg } from "./support/services.js";

vi.setConfig({ testTimeout: 120_000 });

let release: () => void = () => undefined;
const held = new Promise<void>((resolve) => {
  release = resolve;
});
const registerHold = (registry: HandlerRegistry) =>
  registry.register("hold", async () => {
    await held;
    return {};
  });

let fixture: Pipeline;
let second: RunningWorker | undefined;

beforeAll(async () => {
  await requireKafka();
  fixture = await startPipeline(
    "rebalance",
    { workerQueues: "critical", workerConcurrencyCritical: 1 },
    { worker: { register: registerHold } },
  );
});

afterAll(async () => {
  release();
  await second?.stop();
  await fixture?.stop();
});

describe("worker rebalance", () => {
  it("a second worker joins while every slot of the first is held", async () => {
    // One slot: one task runs, one waits for the slot, the third waits for room in the fetch.
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const body = { type: "hold", priority: "critical", delay_ms: 200, timeout_ms: 600_000 };
      ids.push(await submitTask(fixture.api.baseUrl, fixture.tenant.apiKey, body));
    }
    await expect
      .poll(
        () =>
          withPg(fixture.db.url, async (c) =>
            Number(
              (
                await c.query(
                  "SELECT count(*) AS n FROM tasks WHERE id = ANY($1) AND status = 'RUNNING'",
                  [ids],
                )
              ).rows[0].n,
            ),
          ),
        { timeout: 30_000 },
      )
      .toBe(1);
    // All three are published by now (run_at passed); give the fetch a moment to reach the third.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const joinedMs = Date.now();
    second = await startWorker(
      { ...fixture.config, nodeId: `second-${process.pid}` },
      systemClock,
      pino({ level: "silent" }),
      { register: registerHold },
    );
    // The heartbeat inside the stuck fetch runs every sessionTimeout/3 (2 s here).
    expect(Date.now() - joinedMs).toBeLessThan(20_000);
  });
});
