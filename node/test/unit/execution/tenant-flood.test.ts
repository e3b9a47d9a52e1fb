/**
 * One tenant cannot stall a queue for the others (issue 13): its messages
 * waiting for one of its slots do not count toward the consumer's fetch
 * limit (queue-runner.ts, ports/transport.ts Delivery.waiting). Driven on
 * the in-process transport with a stand-in for the executor whose tenant-A
 * tasks never end (long `sleep` tasks): tenant B's task, behind 50 of A's,
 * still starts.
 */
import { randomUUID } from "node:crypto";
import { afterEach, expect, it } from "vitest";
import { MemoryTransport } from "../../../src/adapters/memory/memory-transport.js";
import type { Executor } from "../../../src/app/execution/executor.js";
import { QueueLimiter } from "../../../src/app/execution/limiter.js";
import { queueRunner } from "../../../src/app/execution/queue-runner.js";
import { envelopeJson } from "../../../src/domain/envelope.js";
import type { QueueConsumer } from "../../../src/ports/transport.js";
import { noWorkerMetrics } from "../../../src/ports/worker-metrics.js";

const CONCURRENCY = 4;
const PER_TENANT = 2;
const TENANT_A = randomUUID();
const TENANT_B = randomUUID();

let consumer: QueueConsumer | undefined;
let releaseA: () => void = () => undefined;

afterEach(async () => {
  releaseA();
  await consumer?.stop();
});

const envelope = (tenantId: string) =>
  envelopeJson(
    {
      id: randomUUID(),
      tenantId,
      type: "sleep",
      payloadJson: "{}",
      priority: "standard",
      runAtMs: Date.now(),
      attempt: 0,
      fencingToken: "1",
      timeoutMs: 600_000,
      idempotencyKey: null,
      workflowId: null,
      graceMs: 60_000,
    },
    Date.now(),
  );

it("a tenant's task runs while another tenant's waiters fill more than the fetch limit", async () => {
  const aEnds = new Promise<void>((resolve) => {
    releaseA = resolve;
  });
  const started: string[] = [];
  // What the runner needs of the executor: A's attempts last until the test ends, B's at once.
  const executor = {
    executeOnce: async (e: { tenantId: string }) => {
      started.push(e.tenantId);
      if (e.tenantId === TENANT_A) await aEnds;
      return { report: "completed" as const };
    },
    untilDue: async () => true,
  } as unknown as Executor;
  const transport = new MemoryTransport();
  const publisher = transport.publisher();
  await publisher.publish([
    ...Array.from({ length: 50 }, () => ({
      kind: "standard" as const,
      key: TENANT_A,
      value: envelope(TENANT_A),
    })),
    { kind: "standard", key: TENANT_B, value: envelope(TENANT_B) },
  ]);
  consumer = transport.consumer({
    kind: "standard",
    clientId: "flood-test",
    maxInFlight: 2 * CONCURRENCY, // the worker's fetch limit
    maxWaiting: 10_000,
    maxRetained: 100_000,
    onError: () => undefined,
  });
  await consumer.start(
    queueRunner({
      queue: "standard",
      executor,
      limiter: new QueueLimiter(CONCURRENCY, PER_TENANT),
      metrics: noWorkerMetrics,
      maxEnvelopeChars: 1_000_000,
      onMalformed: () => undefined,
      onError: () => undefined,
    }),
  );
  await expect.poll(() => started.includes(TENANT_B), { timeout: 5000 }).toBe(true);
  // A holds its two slots and no more: the rest of its tasks wait without blocking B.
  expect(started.filter((t) => t === TENANT_A)).toHaveLength(PER_TENANT);
});
