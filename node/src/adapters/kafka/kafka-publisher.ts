/**
 * Kafka through kafkajs: topics are created at start (auto-create is off on
 * our brokers), envelopes are sent in one produce request per batch, with
 * acks from all in-sync replicas. kafkajs' own retries cover a broker
 * restart; a batch that still fails is reported to the caller, which keeps
 * the tasks and tries again.
 */
import { CompressionTypes, Kafka, logLevel, Partitioners, type Producer } from "kafkajs";
import { TOPICS, type TopicKind, topicName } from "../../domain/envelope.js";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import type { OutboundMessage, Publisher } from "../../ports/publisher.js";

export interface KafkaOptions {
  brokers: string[];
  clientId: string;
  topicPrefix: string;
  partitions: number;
  replicationFactor: number;
  onError: (error: unknown) => void;
}

export class KafkaPublisher implements Publisher {
  private readonly kafka: Kafka;
  private readonly producer: Producer;
  private connected: Promise<void> | undefined;

  constructor(private readonly options: KafkaOptions) {
    this.kafka = new Kafka({
      clientId: options.clientId,
      brokers: options.brokers,
      logLevel: logLevel.NOTHING,
      connectionTimeout: 3000,
      requestTimeout: 10_000,
      retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2000 },
    });
    this.producer = this.kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      allowAutoTopicCreation: false,
    });
  }

  async ensureTopics(): Promise<void> {
    const admin = this.kafka.admin();
    try {
      await admin.connect();
      const existing = new Set(await admin.listTopics());
      const missing = TOPICS.map((kind) => this.topicOf(kind)).filter((t) => !existing.has(t));
      if (missing.length > 0) {
        await admin.createTopics({
          waitForLeaders: true,
          topics: missing.map((topic) => ({
            topic,
            numPartitions: this.options.partitions,
            replicationFactor: this.options.replicationFactor,
          })),
        });
      }
    } catch (error) {
      // Another process creating the same topic at the same time is fine.
      if ((error as { type?: string }).type !== "TOPIC_ALREADY_EXISTS") throw unavailable(error);
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  async publish(messages: readonly OutboundMessage[]): Promise<void> {
    if (messages.length === 0) return;
    this.connected ??= this.producer.connect();
    const byTopic = new Map<
      string,
      Array<{ key: string; value: string; headers: Record<string, string> }>
    >();
    for (const m of messages) {
      const topic = this.topicOf(m.kind);
      const list = byTopic.get(topic);
      const message = { key: m.key, value: m.value, headers: m.headers };
      if (list) list.push(message);
      else byTopic.set(topic, [message]);
    }
    try {
      await this.connected;
      await this.producer.sendBatch({
        acks: -1,
        compression: CompressionTypes.None,
        topicMessages: [...byTopic].map(([topic, msgs]) => ({ topic, messages: msgs })),
      });
    } catch (error) {
      this.connected = undefined; // connect again next time (a failed connect stays rejected)
      this.options.onError(error);
      throw unavailable(error);
    }
  }

  async close(): Promise<void> {
    await this.producer.disconnect().catch(() => undefined);
  }

  private topicOf(kind: TopicKind): string {
    return topicName(this.options.topicPrefix, kind);
  }
}

const unavailable = (cause: unknown) =>
  new ChronofenceError(ErrorCode.Unavailable, "kafka unavailable", { cause });
