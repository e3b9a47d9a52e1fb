/**
 * Malformed messages reaching a worker among valid envelopes (issue 13):
 * each is refused with its reason and committed (skipped, counted), none
 * stops the consumer, and every valid envelope around them still runs.
 * Driven on the in-process transport (held to Kafka's behaviour by
 * node/test/contract/transport.contract.ts) with a stand-in executor.
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

let consumer: QueueConsumer | undefined;
afterEach(async () => {
  await consumer?.stop();
});

const valid = (id: string) =>
  envelopeJson(
    {
      id,
      tenantId: randomUUID(),
      type: "noop",
      payloadJson: "{}",
      priority: "standard",
      runAtMs: Date.now(),
      attempt: 0,
      fencingToken: "7",
      timeoutMs: 1000,
      idempotencyKey: null,
      workflowId: null,
      graceMs: 60_000,
    },
    Date.now(),
  );

const MALFORMED = [
  "",
  "not json",
  "[1,2,3]",
  "null",
  '{"v":1}',
  '{"v":99,"task_id":"x"}',
  valid(randomUUID()).replace('"fencing_token":"7"', '"fencing_token":7'),
  valid(randomUUID()).replace(/"tenant_id":"[^"]+"/, '"tenant_id":"not-a-uuid"'),
  "x".repeat(2_000_000),
  '{"__proto__":{"polluted":true}}',
];

it("skips each malformed message with its reason and runs every valid one around them", async () => {
  const ran: string[] = [];
  const refused: string[] = [];
  const executor = {
    executeOnce: async (e: { taskId: string }) => {
      ran.push(e.taskId);
      return { report: "completed" as const };
    },
    untilDue: async () => true,
  } as unknown as Executor;
  const ids = Array.from({ length: MALFORMED.length + 1 }, () => randomUUID());
  const values: string[] = [];
  ids.forEach((id, i) => {
    values.push(valid(id));
    if (i < MALFORMED.length) values.push(MALFORMED[i]!);
  });
  const transport = new MemoryTransport();
  await transport
    .publisher()
    .publish(values.map((value) => ({ kind: "standard" as const, key: "k", value })));
  consumer = transport.consumer({
    kind: "standard",
    clientId: "malformed-test",
    maxInFlight: 4,
    maxWaiting: 100,
    maxRetained: 1000,
    onError: () => undefined,
  });
  await consumer.start(
    queueRunner({
      queue: "standard",
      executor,
      limiter: new QueueLimiter(4, 4),
      metrics: { ...noWorkerMetrics, malformed: (_queue, reason) => refused.push(reason) },
      maxEnvelopeChars: 1_000_000,
      onMalformed: () => undefined,
      onError: () => undefined,
    }),
  );
  await expect.poll(() => ran.length, { timeout: 5000 }).toBe(ids.length);
  expect([...ran].sort()).toEqual([...ids].sort());
  expect(refused).toHaveLength(MALFORMED.length);
  expect(new Set(refused)).toEqual(
    new Set(["not_json", "not_an_object", "bad_fields", "unsupported_version", "too_large"]),
  );
});
