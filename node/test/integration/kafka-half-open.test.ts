/**
 * Kafka clients on a half-open connection (a frozen host, a partition: no
 * reset ever arrives). A test-owned broker advertises a proxy that, once
 * frozen, forwards nothing on the connections it has and keeps them open;
 * requests on them time out. The dispatcher's publisher and the worker's
 * consumer must drop them and connect again, rather than time out on them
 * until the kernel gives up.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { KafkaPublisher } from "../../src/adapters/kafka/kafka-publisher.js";
import { KafkaTaskConsumer } from "../../src/adapters/kafka/kafka-task-consumer.js";
import { type FreezingProxy, freezingProxy } from "./support/freezing-proxy.js";
import { newTopicPrefix } from "./support/kafka.js";
import { type OwnKafka, ownKafka } from "./support/own-kafka.js";

vi.setConfig({ testTimeout: 120_000 });

let proxy: FreezingProxy;
let kafka: OwnKafka;
let publisher: KafkaPublisher;
let consumer: KafkaTaskConsumer;
const consumed = new Set<string>();

beforeAll(async () => {
  let brokerPort = 0;
  proxy = await freezingProxy(() => ({ host: "127.0.0.1", port: brokerPort }));
  kafka = await ownKafka({ advertisedPort: proxy.port });
  brokerPort = kafka.port;
  await kafka.start();
  const topicPrefix = newTopicPrefix("half-open");
  publisher = new KafkaPublisher({
    brokers: [kafka.brokers],
    clientId: "half-open-test",
    topicPrefix,
    partitions: 1,
    replicationFactor: 1,
    requestTimeoutMs: 1000,
    retries: 1,
    onError: () => undefined,
  });
  await publisher.ensureTopics();
  consumer = new KafkaTaskConsumer({
    brokers: [kafka.brokers],
    clientId: "half-open-test",
    topicPrefix,
    kind: "critical",
    maxInFlight: 16,
    maxRetained: 1000,
    commitIntervalMs: 100,
    sessionTimeoutMs: 6000,
    retries: 1,
    requestTimeoutMs: 1000,
    onError: () => undefined,
  });
  await consumer.start(async (value) => {
    consumed.add(value?.toString() ?? "");
    return true;
  });
}, 240_000);

afterAll(async () => {
  await consumer?.stop();
  await publisher?.close();
  await kafka?.destroy();
  await proxy?.close();
}, 120_000);

const send = (value: string) => publisher.publish([{ kind: "critical", key: "t", value }]);

describe("Kafka clients on a half-open connection", () => {
  it("the publisher times out once, then connects again and sends; the consumer gets it", async () => {
    await send("before");
    await expect.poll(() => consumed.has("before"), { timeout: 30_000 }).toBe(true);
    proxy.freeze();
    await expect(send("frozen")).rejects.toThrow(/kafka unavailable/);
    await expect
      .poll(
        () =>
          send("after").then(
            () => "sent",
            () => "failed",
          ),
        { timeout: 30_000, interval: 500 },
      )
      .toBe("sent");
    await expect.poll(() => consumed.has("after"), { timeout: 60_000, interval: 500 }).toBe(true);
  });
});
