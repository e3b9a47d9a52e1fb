/**
 * Kafka through kafkajs: topics are created at start (auto-create is off on
 * our brokers), envelopes are sent in one produce request per batch, with
 * acks from all in-sync replicas. kafkajs' own retries cover a broker
 * restart; a batch that still fails is reported to the caller, which keeps
 * the tasks and tries again — unless the broker refused it as too large
 * (PayloadTooLarge: kafkajs does not retry that, and neither should anyone).
 */
import "./kafkajs-idle-timers.js"; // before kafkajs is used: its idle timers
import {
  CompressionTypes,
  type ICustomPartitioner,
  Kafka,
  logLevel,
  Partitioners,
  type Producer,
} from "kafkajs";
import { TOPICS, type TopicKind, topicName } from "../../domain/envelope.js";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import type { OutboundMessage, Publisher } from "../../ports/publisher.js";

export interface KafkaOptions {
  brokers: string[];
  clientId: string;
  topicPrefix: string;
  partitions: number;
  replicationFactor: number;
  /** kafkajs' per-request timeout (default 10 s) and retries of a send (default 5). */
  requestTimeoutMs?: number;
  retries?: number;
  onError: (error: unknown) => void;
}

export class KafkaPublisher implements Publisher {
  private readonly kafka: Kafka;
  private producer: Producer;
  private connected: Promise<void> | undefined;
  /** Producers replaced after a timeout, until their disconnect (which waits for their requests) ends. */
  private readonly retiring = new Set<Promise<void>>();

  constructor(private readonly options: KafkaOptions) {
    this.kafka = new Kafka({
      clientId: options.clientId,
      brokers: options.brokers,
      logLevel: logLevel.NOTHING,
      connectionTimeout: 3000,
      requestTimeout: options.requestTimeoutMs ?? 10_000,
      retry: { retries: options.retries ?? 5, initialRetryTime: 100, maxRetryTime: 2000 },
    });
    this.producer = this.newProducer();
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
    const producer = this.producer;
    this.connected ??= producer.connect();
    const byTopic = new Map<string, Array<{ key: string; value: string }>>();
    for (const m of messages) {
      const topic = this.topicOf(m.kind);
      const list = byTopic.get(topic);
      const message = { key: m.key, value: m.value };
      if (list) list.push(message);
      else byTopic.set(topic, [message]);
    }
    try {
      await this.connected;
      await producer.sendBatch({
        acks: -1,
        compression: CompressionTypes.None,
        topicMessages: [...byTopic].map(([topic, msgs]) => ({ topic, messages: msgs })),
      });
    } catch (error) {
      // Not the broker's health: this request can never succeed (the caller splits it).
      if (refusedAsTooLarge(error)) throw tooLarge(error);
      this.options.onError(error);
      if (producer === this.producer) {
        this.connected = undefined; // connect again next time (a failed connect stays rejected)
        // kafkajs keeps a connection whose requests time out: on a half-open one (a frozen
        // host, a partition) every send would time out on it for about 15 minutes. A new
        // producer has its own connections; the old one's disconnect waits for its requests.
        if (causedByTimeout(error)) this.replaceProducer();
      }
      throw unavailable(error);
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.producer.disconnect().catch(() => undefined), ...this.retiring]);
  }

  private newProducer(): Producer {
    return this.kafka.producer({
      createPartitioner: cachedKeyPartitioner,
      allowAutoTopicCreation: false,
    });
  }

  private replaceProducer(): void {
    const old = this.producer;
    this.producer = this.newProducer();
    const retired = old
      .disconnect()
      .catch(() => undefined)
      .finally(() => this.retiring.delete(retired));
    this.retiring.add(retired);
  }

  private topicOf(kind: TopicKind): string {
    return topicName(this.options.topicPrefix, kind);
  }
}

/**
 * kafkajs' default (murmur2 of the key, as the Java client), remembered per
 * key and partition count: every message is keyed by its tenant, so the same
 * few keys are hashed over and over, and the default also filters the
 * partition list for every message. The same partitions as the default, for
 * less CPU per message.
 */
const cachedKeyPartitioner: ICustomPartitioner = () => {
  const hashed = Partitioners.DefaultPartitioner();
  const cache = new Map<string, number>();
  return (args) => {
    const { key } = args.message;
    if (typeof key !== "string") return hashed(args);
    const cacheKey = `${args.partitionMetadata.length}:${key}`;
    let partition = cache.get(cacheKey);
    if (partition === undefined) {
      partition = hashed(args);
      if (cache.size >= 100_000) cache.clear(); // tenants are few; bound it anyway
      cache.set(cacheKey, partition);
    }
    return partition;
  };
};

function causedByTimeout(error: unknown): boolean {
  for (let e = error; e instanceof Error; e = e.cause) {
    if (e.name === "KafkaJSRequestTimeoutError") return true;
  }
  return false;
}

/** The broker's MESSAGE_TOO_LARGE (a record) or RECORD_LIST_TOO_LARGE (a record batch). */
const TOO_LARGE = new Set(["MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE"]);

function refusedAsTooLarge(error: unknown, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 5) return false;
  if (TOO_LARGE.has((error as { type?: string }).type ?? "")) return true;
  const nested = (error as { errors?: unknown[] }).errors ?? [];
  return [error.cause, ...nested].some((e) => refusedAsTooLarge(e, depth + 1));
}

const unavailable = (cause: unknown) =>
  new ChronofenceError(ErrorCode.Unavailable, "kafka unavailable", { cause });

const tooLarge = (cause: unknown) =>
  new ChronofenceError(ErrorCode.PayloadTooLarge, "the broker refused a message as too large", {
    cause,
  });
