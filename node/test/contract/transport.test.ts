/**
 * The transport contract, against the running Kafka broker (its own topic
 * prefix; the workers' consumer through either client), the in-process transport, and direct mode's mix of the two (two
 * queues in process, two on Kafka).
 */
import { Kafka, logLevel } from "kafkajs";
import { directTransport } from "../../src/adapters/memory/direct-transport.js";
import { MemoryTransport } from "../../src/adapters/memory/memory-transport.js";
import { resolveConfig } from "../../src/config/config.js";
import { TOPICS, type TopicKind, topicName } from "../../src/domain/envelope.js";
import { kafkaTransport } from "../../src/main/role-connections.js";
import { newTopicPrefix, requireKafka, TEST_KAFKA_BROKERS } from "../integration/support/kafka.js";
import { type TransportSubject, transportContract } from "./transport.contract.js";

async function kafkaSubject(
  kafkaConsumer: "kafkajs" | "platformatic" = "kafkajs",
): Promise<TransportSubject> {
  await requireKafka();
  const topicPrefix = newTopicPrefix("contract");
  const config = resolveConfig(
    {},
    {
      kafkaBrokers: TEST_KAFKA_BROKERS.join(","),
      topicPrefix,
      kafkaPartitions: 2,
      workerCommitIntervalMs: 100,
      workerSessionTimeoutMs: 6000,
      kafkaConsumer,
    },
  );
  return {
    transport: kafkaTransport(config),
    async cleanup() {
      const admin = new Kafka({
        clientId: "contract-cleanup",
        brokers: TEST_KAFKA_BROKERS,
        logLevel: logLevel.NOTHING,
      }).admin();
      await admin.connect();
      try {
        await admin
          .deleteTopics({ topics: TOPICS.map((kind) => topicName(topicPrefix, kind)) })
          .catch(() => undefined);
        await admin
          .deleteGroups(TOPICS.map((kind) => `${topicPrefix}chronofence-workers.${kind}`))
          .catch(() => undefined);
      } finally {
        await admin.disconnect();
      }
    },
  };
}

transportContract("kafka", () => kafkaSubject());

transportContract("kafka, consumed through @platformatic/kafka", () =>
  kafkaSubject("platformatic"),
);

transportContract("in process", async () => ({
  transport: new MemoryTransport(),
  cleanup: async () => undefined,
}));

transportContract(
  "direct (critical and overdue in process, standard and bulk on Kafka)",
  async () => {
    const kafka = await kafkaSubject();
    const kept = new Set<TopicKind>(["critical", "overdue"]);
    return {
      transport: directTransport(kafka.transport, new MemoryTransport(), kept),
      cleanup: kafka.cleanup,
    };
  },
);
