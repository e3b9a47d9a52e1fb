/**
 * A worker whose slots are all held by long tasks still lets its group
 * rebalance: the consumer waiting for room gives up when a heartbeat says a
 * rebalance began, so a second worker joining is not kept waiting until the
 * long tasks end (kafkajs' rebalance timeout, a minute, would expel the
 * first worker instead) — and the second worker then gets work.
 *
 * Tasks of two tenants whose keys hash to the two different partitions of
 * the queue: whichever partition the second worker is given, it holds a task
 * the first worker has not started (the first has one slot, and it is taken).
 */
import { Partitioners } from "kafkajs";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { systemClock } from "../../src/adapters/clock/system-clock.js";
import { topicName } from "../../src/domain/envelope.js";
import { type RunningWorker, startWorker } from "../../src/main/worker.js";
import type { HandlerRegistry } from "../../src/ports/handler.js";
import { newTenant, submitTask, type TestTenant } from "./support/api.js";
import { requireKafka, TestConsumer } from "./support/kafka.js";
import { type Pipeline, startPipeline } from "./support/pipeline.js";
import { withPg } from "./support/services.js";

vi.setConfig({ testTimeout: 180_000 });

/** kafkajs' default rebalance timeout: how long a group waits for a member that does not rejoin. */
const REBALANCE_TIMEOUT_MS = 60_000;
const PARTITIONS = 2;

/** Each run of `hold` waits until the test lets it go; `runs` counts the runs of each task. */
const holds = new Map<string, () => void>();
const runs = new Map<string, number>();
const registerHold = (registry: HandlerRegistry) =>
  registry.register("hold", async (_payload, ctx) => {
    runs.set(ctx.taskId, (runs.get(ctx.taskId) ?? 0) + 1);
    await new Promise<void>((resolve) => holds.set(ctx.taskId, resolve));
    return {};
  });

let fixture: Pipeline;
let consumer: TestConsumer;
let second: RunningWorker | undefined;

beforeAll(async () => {
  await requireKafka();
  fixture = await startPipeline(
    "rebalance",
    { workerQueues: "critical", workerConcurrencyCritical: 1, kafkaPartitions: PARTITIONS },
    { worker: { register: registerHold } },
  );
  consumer = new TestConsumer(fixture.config.topicPrefix);
  await consumer.start();
});

afterAll(async () => {
  for (const release of holds.values()) release();
  await second?.stop();
  await consumer?.stop();
  await fixture?.stop();
});

/** The partition the dispatcher's producer (kafkajs' default partitioner) picks for a tenant. */
function partitionOf(tenantId: string): number {
  const partitioner = Partitioners.DefaultPartitioner();
  return partitioner({
    topic: topicName(fixture.config.topicPrefix, "critical"),
    partitionMetadata: Array.from({ length: PARTITIONS }, (_, partitionId) => ({
      partitionErrorCode: 0,
      partitionId,
      leader: 0,
      replicas: [0],
      isr: [0],
    })),
    message: { key: tenantId, value: null },
  });
}

/** A second tenant whose tasks land on the other partition than `first`'s. */
async function tenantOnOtherPartition(first: TestTenant): Promise<TestTenant> {
  for (let i = 0; i < 40; i++) {
    const candidate = await newTenant(fixture.config);
    if (partitionOf(candidate.id) !== partitionOf(first.id)) return candidate;
  }
  throw new Error("no tenant on the other partition in 40 tries");
}

const rowsOf = (ids: string[]) =>
  withPg(
    fixture.db.url,
    async (c) =>
      (await c.query("SELECT id, status, lease_owner FROM tasks WHERE id = ANY($1::uuid[])", [ids]))
        .rows as Array<{ id: string; status: string; lease_owner: string | null }>,
  );

describe("worker rebalance", () => {
  it("a second worker joins while every slot of the first is held, and gets work", async () => {
    const a = fixture.tenant;
    const b = await tenantOnOtherPartition(a);
    const body = { type: "hold", priority: "critical", delay_ms: 200, timeout_ms: 600_000 };
    const ids: string[] = [];
    for (const tenant of [a, b, a, b]) {
      ids.push(await submitTask(fixture.api.baseUrl, tenant.apiKey, body));
    }
    const firstId = fixture.worker!.workerId;
    // One slot: one task runs on the first worker; the others wait for the slot or for room.
    await expect
      .poll(async () => (await rowsOf(ids)).filter((r) => r.status === "RUNNING"), {
        timeout: 30_000,
      })
      .toMatchObject([{ lease_owner: firstId }]);
    // Every envelope is in Kafka, so the first worker's fetch has them (it is stuck waiting
    // for room) by the time the second worker, still connecting, asks to join.
    await expect
      .poll(() => ids.every((id) => consumer.ofTask(id).length > 0), { timeout: 30_000 })
      .toBe(true);

    const joiningMs = Date.now();
    second = await startWorker(
      { ...fixture.config, nodeId: `second-${process.pid}` },
      systemClock,
      pino({ level: "silent" }),
      { register: registerHold },
    );
    // Without the wake-up, the join completes only when the group gives up on the first
    // worker, after the rebalance timeout; the heartbeat inside the stuck fetch runs every
    // sessionTimeout/3 (2 s here).
    expect(Date.now() - joiningMs).toBeLessThan(REBALANCE_TIMEOUT_MS / 2);
    const secondId = second.workerId;
    await expect
      .poll(async () => (await rowsOf(ids)).some((r) => r.lease_owner === secondId), {
        timeout: 30_000,
      })
      .toBe(true);
    // Both run one task each; the first was not expelled (its task still runs under it).
    const running = (await rowsOf(ids)).filter((r) => r.status === "RUNNING");
    expect(running.map((r) => r.lease_owner).sort()).toEqual([firstId, secondId].sort());

    // Let everything go: each task completes, and ran once.
    const completed = async () => {
      for (const release of holds.values()) release();
      return (await rowsOf(ids)).filter((r) => r.status === "COMPLETED").length;
    };
    await expect.poll(completed, { timeout: 60_000, interval: 200 }).toBe(ids.length);
    expect(ids.map((id) => runs.get(id))).toEqual([1, 1, 1, 1]);
  });
});
