/**
 * The same publisher as kafka-publisher.ts through @platformatic/kafka, to
 * measure the two clients side by side (bench/kafka-clients.ts; the config's
 * kafkaClient picks one). Same topics, same partitions for a key (the Java
 * client's murmur2, as kafkajs), acks from all in-sync replicas, one produce
 * request per batch, and the same refusals: too large is PayloadTooLarge, the
 * rest Unavailable.
 */
import {
  Admin,
  compatibilityPartitioner,
  ProduceAcks,
  Producer,
  stringSerializers,
} from "@platformatic/kafka";
import { TOPICS, type TopicKind, topicName } from "../../domain/envelope.js";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import type { OutboundMessage, Publisher } from "../../ports/publisher.js";
import type { KafkaOptions } from "./kafka-publisher.js";

export class PlatformaticPublisher implements Publisher {
  private readonly producer: Producer<string, string, string, string>;

  constructor(private readonly options: KafkaOptions) {
    this.producer = new Producer({
      clientId: options.clientId,
      bootstrapBrokers: options.brokers,
      serializers: stringSerializers,
      acks: ProduceAcks.ALL,
      partitioner: compatibilityPartitioner,
      connectTimeout: 3000,
      timeout: options.requestTimeoutMs ?? 10_000,
      retries: options.retries ?? 5,
      retryDelay: 100,
    });
  }

  async ensureTopics(): Promise<void> {
    const admin = new Admin({
      clientId: this.options.clientId,
      bootstrapBrokers: this.options.brokers,
    });
    try {
      const existing = new Set(await admin.listTopics());
      const missing = TOPICS.map((kind) => this.topicOf(kind)).filter((t) => !existing.has(t));
      if (missing.length > 0) {
        await admin.createTopics({
          topics: missing,
          partitions: this.options.partitions,
          replicas: this.options.replicationFactor,
        });
      }
    } catch (error) {
      // Another process creating the same topic at the same time is fine.
      if (!hasApiId(error, ALREADY_EXISTS)) throw unavailable(error);
    } finally {
      await admin.close().catch(() => undefined);
    }
  }

  async publish(messages: readonly OutboundMessage[]): Promise<void> {
    if (messages.length === 0) return;
    const toSend = new Array<{ topic: string; key: string; value: string }>(messages.length);
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i]!;
      toSend[i] = { topic: this.topicOf(m.kind), key: m.key, value: m.value };
    }
    try {
      await this.producer.send({ messages: toSend });
    } catch (error) {
      if (hasApiId(error, TOO_LARGE)) throw tooLarge(error);
      this.options.onError(error);
      throw unavailable(error);
    }
  }

  async close(): Promise<void> {
    await this.producer.close().catch(() => undefined);
  }

  private topicOf(kind: TopicKind): string {
    return topicName(this.options.topicPrefix, kind);
  }
}

const TOO_LARGE = new Set(["MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE"]);
const ALREADY_EXISTS = new Set(["TOPIC_ALREADY_EXISTS"]);

/** A protocol error with one of `ids` anywhere in the error, its causes or its nested errors. */
function hasApiId(error: unknown, ids: ReadonlySet<string>, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 5) return false;
  if (ids.has((error as { apiId?: string }).apiId ?? "")) return true;
  const nested = (error as { errors?: unknown[] }).errors ?? [];
  return [error.cause, ...nested].some((e) => hasApiId(e, ids, depth + 1));
}

const unavailable = (cause: unknown) =>
  new ChronofenceError(ErrorCode.Unavailable, "kafka unavailable", { cause });

const tooLarge = (cause: unknown) =>
  new ChronofenceError(ErrorCode.PayloadTooLarge, "the broker refused a message as too large", {
    cause,
  });
