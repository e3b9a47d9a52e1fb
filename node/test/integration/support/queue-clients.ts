/**
 * The dispatcher's publisher and a worker's consumer of the critical queue,
 * on a test-owned broker, with one retry and 1 s requests so that a broker
 * failure surfaces within seconds. `consumed` holds every value handled.
 */
import { KafkaPublisher } from "../../../src/adapters/kafka/kafka-publisher.js";
import { KafkaTaskConsumer } from "../../../src/adapters/kafka/kafka-task-consumer.js";
import { newTopicPrefix } from "./kafka.js";

export interface QueueClients {
  publisher: KafkaPublisher;
  consumer: KafkaTaskConsumer;
  consumed: Set<string>;
  /** Resolves once the consumer joined its group. */
  joined: Promise<void>;
  /** Publishes the values to the critical queue, in one request. */
  send(values: string[]): Promise<void>;
  stop(): Promise<void>;
}

export async function startQueueClients(
  brokers: string,
  name: string,
  hooks: {
    onError?: (error: unknown) => void;
    onRunning?: (running: boolean) => void;
    /** Return before the consumer joined its group (a test of a join that fails first). */
    dontWaitForJoin?: boolean;
  } = {},
): Promise<QueueClients> {
  const topicPrefix = newTopicPrefix(name);
  const common = {
    brokers: [brokers],
    clientId: `${name}-test`,
    topicPrefix,
    requestTimeoutMs: 1000,
    retries: 1,
  };
  const publisher = new KafkaPublisher({
    ...common,
    partitions: 2,
    replicationFactor: 1,
    onError: () => undefined,
  });
  await publisher.ensureTopics();
  const consumer = new KafkaTaskConsumer({
    ...common,
    kind: "critical",
    maxInFlight: 16,
    maxRetained: 1000,
    commitIntervalMs: 100,
    sessionTimeoutMs: 6000,
    onError: hooks.onError ?? (() => undefined),
    onRunning: hooks.onRunning,
  });
  const consumed = new Set<string>();
  const joined = consumer.start(async ({ value }) => {
    consumed.add(value);
    return true;
  });
  if (!hooks.dontWaitForJoin) await joined;
  return {
    publisher,
    consumer,
    consumed,
    joined,
    send: (values) =>
      publisher.publish(values.map((value) => ({ kind: "critical", key: "t", value }))),
    async stop() {
      await consumer.stop();
      await publisher.close();
    },
  };
}
