/** The transport contract, against the running Kafka broker (its own topic prefix) and the in-process transport. */
import { Kafka, logLevel } from "kafkajs";
import { MemoryTransport } from "../../src/adapters/memory/memory-transport.js";
import { resolveConfig } from "../../src/config/config.js";
import { TOPICS, topicName } from "../../src/domain/envelope.js";
import { kafkaTransport } from "../../src/main/role-connections.js";
import { newTopicPrefix, requireKafka, TEST_KAFKA_BROKERS } from "../integration/support/kafka.js";
import { transportContract } from "./transport.contract.js";

transportContract("kafka", async () => {
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
});

transportContract("in process", async () => ({
  transport: new MemoryTransport(),
  cleanup: async () => undefined,
}));
