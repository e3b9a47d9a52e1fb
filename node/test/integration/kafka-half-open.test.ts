/**
 * The dispatcher's Kafka producer on a half-open connection (a frozen host, a
 * partition: no reset ever arrives). A test-owned broker advertises a proxy
 * that, once frozen, forwards nothing on the connections it has and keeps
 * them open; sends on them time out. The publisher must drop them and
 * connect again, rather than time out on them until the kernel gives up.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { KafkaPublisher } from "../../src/adapters/kafka/kafka-publisher.js";
import { type FreezingProxy, freezingProxy } from "./support/freezing-proxy.js";
import { newTopicPrefix } from "./support/kafka.js";
import { type OwnKafka, ownKafka } from "./support/own-kafka.js";

vi.setConfig({ testTimeout: 120_000 });

let proxy: FreezingProxy;
let kafka: OwnKafka;
let publisher: KafkaPublisher;

beforeAll(async () => {
  let brokerPort = 0;
  proxy = await freezingProxy(() => ({ host: "127.0.0.1", port: brokerPort }));
  kafka = await ownKafka({ advertisedPort: proxy.port });
  brokerPort = kafka.port;
  await kafka.start();
  publisher = new KafkaPublisher({
    brokers: [kafka.brokers],
    clientId: "half-open-test",
    topicPrefix: newTopicPrefix("half-open"),
    partitions: 1,
    replicationFactor: 1,
    requestTimeoutMs: 1000,
    retries: 1,
    onError: () => undefined,
  });
  await publisher.ensureTopics();
}, 240_000);

afterAll(async () => {
  await publisher?.close();
  await kafka?.destroy();
  await proxy?.close();
}, 120_000);

const send = (value: string) => publisher.publish([{ kind: "critical", key: "t", value }]);

describe("the publisher on a half-open Kafka connection", () => {
  it("times out once, then connects again and sends", async () => {
    await send("before");
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
  });
});
