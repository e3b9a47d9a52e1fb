/**
 * The dispatcher's publisher on the running broker: a batch spanning every
 * topic writes each message once, to the partition the Java client (and
 * kafkajs) picks for its key. @platformatic/kafka 1.35.0 fails it: it
 * duplicates and misplaces the messages of a produce request that spans
 * topics, and sends a retried request whole (bench/platformatic-publisher.ts).
 */
import { type Admin, Kafka, logLevel, Partitioners } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KafkaPublisher } from "../../src/adapters/kafka/kafka-publisher.js";
import { TOPICS, topicName } from "../../src/domain/envelope.js";
import { newTopicPrefix, requireKafka, TEST_KAFKA_BROKERS } from "./support/kafka.js";

const PARTITIONS = 4;
const topicPrefix = newTopicPrefix("publisher");
let publisher: KafkaPublisher;
let admin: Admin;

beforeAll(async () => {
  await requireKafka();
  publisher = new KafkaPublisher({
    brokers: TEST_KAFKA_BROKERS,
    clientId: "publisher-test",
    topicPrefix,
    partitions: PARTITIONS,
    replicationFactor: 1,
    onError: () => undefined,
  });
  await publisher.ensureTopics();
  admin = new Kafka({ brokers: TEST_KAFKA_BROKERS, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
});

afterAll(async () => {
  await publisher?.close();
  await admin
    ?.deleteTopics({ topics: TOPICS.map((kind) => topicName(topicPrefix, kind)) })
    .catch(() => undefined);
  await admin?.disconnect();
});

describe("the Kafka publisher", () => {
  it("writes a batch over every topic once, each message to its key's partition", async () => {
    const keys = ["tenant-a", "tenant-b", "tenant-c", "tenant-d", "tenant-e"];
    const messages = TOPICS.flatMap((kind) =>
      keys.flatMap((key) => [1, 2].map((n) => ({ kind, key, value: `${kind}/${key}/${n}` }))),
    );
    await publisher.publish(messages);

    const javaPartitioner = Partitioners.DefaultPartitioner();
    const partitionMetadata = Array.from({ length: PARTITIONS }, (_, partitionId) => ({
      partitionId,
      leader: 0,
      partitionErrorCode: 0,
      replicas: [0],
      isr: [0],
    }));
    for (const kind of TOPICS) {
      const topic = topicName(topicPrefix, kind);
      const expected = new Array<number>(PARTITIONS).fill(0);
      for (const m of messages.filter((m) => m.kind === kind)) {
        expected[
          javaPartitioner({ topic, partitionMetadata, message: { key: m.key, value: "" } })
        ]!++;
      }
      const offsets = await admin.fetchTopicOffsets(topic);
      const written = new Array<number>(PARTITIONS).fill(0);
      for (const o of offsets) written[o.partition] = Number(o.high);
      expect(written, topic).toEqual(expected);
    }
  });
});
