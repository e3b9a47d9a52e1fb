/**
 * The real Kafka broker for integration tests (scripts/kafka.sh; started by
 * vitest's globalSetup when absent). Each test file uses its own topic
 * prefix; TestConsumer reads its four topics from the beginning and records
 * when each message arrived.
 */
import { randomBytes } from "node:crypto";
import { type Consumer, Kafka, logLevel } from "kafkajs";
import { TOPICS, topicName } from "../../../src/domain/envelope.js";

export const TEST_KAFKA_BROKERS = (process.env.KAFKA_BROKERS ?? "127.0.0.1:9092").split(",");

export async function requireKafka(): Promise<void> {
  const kafka = new Kafka({
    clientId: "chronofence-test-check",
    brokers: TEST_KAFKA_BROKERS,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3000,
    retry: { retries: 1 },
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
    await admin.listTopics();
  } catch (error) {
    throw new Error(
      `Kafka is not reachable at ${TEST_KAFKA_BROKERS.join(",")} (${(error as Error).message}); start it with \`scripts/kafka.sh start\``,
    );
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

export const newTopicPrefix = (name: string): string =>
  `cf-test-${name}-${randomBytes(4).toString("hex")}.`;

export interface Envelope {
  v: number;
  task_id: string;
  tenant_id: string;
  type: string;
  attempt: number;
  fencing_token: string;
  run_at: string;
  dispatched_at: string;
  timeout_ms: number;
  idempotency_key: string | null;
  payload: unknown;
  workflow_id?: string;
  dispatcher: string;
  shard: number;
  shard_epoch: number;
}

export interface Received {
  topic: string;
  key: string;
  envelope: Envelope;
  arrivedAtMs: number;
}

export class TestConsumer {
  readonly messages: Received[] = [];
  private consumer: Consumer | undefined;
  private kafka = new Kafka({
    clientId: "chronofence-test-consumer",
    brokers: TEST_KAFKA_BROKERS,
    logLevel: logLevel.NOTHING,
  });

  constructor(readonly topicPrefix: string) {}

  /** Creates the topics (as Chronofence would) and starts reading them from the beginning. */
  async start(): Promise<void> {
    const topics = TOPICS.map((kind) => topicName(this.topicPrefix, kind));
    const admin = this.kafka.admin();
    await admin.connect();
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t));
    if (missing.length > 0) {
      await admin
        .createTopics({
          waitForLeaders: true,
          topics: missing.map((topic) => ({ topic, numPartitions: 2, replicationFactor: 1 })),
        })
        .catch(() => undefined);
    }
    await admin.disconnect();
    this.consumer = this.kafka.consumer({
      groupId: `${this.topicPrefix}consumer`,
      maxWaitTimeInMs: 50,
    });
    await this.consumer.connect();
    await this.consumer.subscribe({ topics, fromBeginning: true });
    const joined = new Promise<void>((resolve) =>
      this.consumer!.on(this.consumer!.events.GROUP_JOIN, () => resolve()),
    );
    await this.consumer.run({
      eachMessage: async ({ topic, message }) => {
        const arrivedAtMs = Date.now();
        this.messages.push({
          topic,
          key: message.key?.toString() ?? "",
          envelope: JSON.parse(message.value!.toString()) as Envelope,
          arrivedAtMs,
        });
      },
    });
    await joined;
  }

  ofTask(taskId: string): Received[] {
    return this.messages.filter((m) => m.envelope.task_id === taskId);
  }

  publishedIds(): Set<string> {
    return new Set(this.messages.map((m) => m.envelope.task_id));
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect().catch(() => undefined);
    const admin = this.kafka.admin();
    await admin.connect().catch(() => undefined);
    await admin
      .deleteTopics({ topics: TOPICS.map((kind) => topicName(this.topicPrefix, kind)) })
      .catch(() => undefined);
    await admin.deleteGroups([`${this.topicPrefix}consumer`]).catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
  }
}
