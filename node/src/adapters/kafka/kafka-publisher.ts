/**
 * Kafka through @platformatic/kafka (it took 30–40 % less CPU per message
 * than kafkajs in bench:kafka-clients, whose baseline is
 * bench/kafkajs-publisher.ts): topics are created at start (auto-create is
 * off on our brokers), envelopes are sent in one produce request per batch,
 * with acks from all in-sync replicas, to the partition the Java client (and
 * kafkajs) picks for the key. The client's own retries cover a broker
 * restart; a batch that still fails is reported to the caller, which keeps
 * the tasks and tries again — unless the broker refused it as too large
 * (PayloadTooLarge: no retry can change that).
 */
import {
  Admin,
  compatibilityPartitioner,
  ProduceAcks,
  Producer,
  stringSerializers,
  TimeoutError,
} from "@platformatic/kafka";
import { TOPICS, type TopicKind, topicName } from "../../domain/envelope.js";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import type { OutboundMessage, Publisher } from "../../ports/publisher.js";

type StringProducer = Producer<string, string, string, string>;

export interface KafkaOptions {
  brokers: string[];
  clientId: string;
  topicPrefix: string;
  partitions: number;
  replicationFactor: number;
  /** Per-request timeout (default 10 s) and retries of a send (default 5). */
  requestTimeoutMs?: number;
  retries?: number;
  onError: (error: unknown) => void;
}

export class KafkaPublisher implements Publisher {
  private producer: StringProducer;
  /** Producers replaced after a timeout, until their close ends. */
  private readonly retiring = new Set<Promise<void>>();

  constructor(private readonly options: KafkaOptions) {
    this.producer = this.newProducer();
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
    const producer = this.producer;
    try {
      await producer.send({ messages: toSend });
    } catch (error) {
      if (hasApiId(error, TOO_LARGE)) throw tooLarge(error);
      this.options.onError(error);
      // A request that timed out leaves its connection in the pool: on a half-open one (a
      // frozen host, a partition) every send would time out on it until the kernel gives up.
      // A new producer has its own connections. (A TimeoutError's `code` says PLT_KFK_NETWORK
      // in 1.35.0: its class is what tells.)
      if (producer === this.producer && anyWithin(error, (e) => e instanceof TimeoutError))
        this.replaceProducer();
      throw unavailable(error);
    }
  }

  async close(): Promise<void> {
    await Promise.all([closeQuietly(this.producer), ...this.retiring]);
  }

  private newProducer(): StringProducer {
    return new Producer({
      clientId: this.options.clientId,
      bootstrapBrokers: this.options.brokers,
      serializers: stringSerializers,
      acks: ProduceAcks.ALL,
      partitioner: compatibilityPartitioner,
      connectTimeout: 3000,
      timeout: this.options.requestTimeoutMs ?? 10_000,
      retries: this.options.retries ?? 5,
      retryDelay: 100,
    });
  }

  private replaceProducer(): void {
    const old = this.producer;
    this.producer = this.newProducer();
    const retired = closeQuietly(old).finally(() => this.retiring.delete(retired));
    this.retiring.add(retired);
  }

  private topicOf(kind: TopicKind): string {
    return topicName(this.options.topicPrefix, kind);
  }
}

/** Closes its connections (an error closing it is nobody's business). */
const closeQuietly = (producer: StringProducer): Promise<void> =>
  producer.close().catch(() => undefined);

/** The broker's MESSAGE_TOO_LARGE (a record) or RECORD_LIST_TOO_LARGE (a record batch). */
const TOO_LARGE = new Set(["MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE"]);
const ALREADY_EXISTS = new Set(["TOPIC_ALREADY_EXISTS"]);

/** The error, its causes or its nested errors (up to 5 deep), as far as `found` says no. */
function anyWithin(error: unknown, found: (e: Error) => boolean, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 5) return false;
  if (found(error)) return true;
  const nested = (error as { errors?: unknown[] }).errors ?? [];
  return [error.cause, ...nested].some((e) => anyWithin(e, found, depth + 1));
}

/** A protocol error with one of `ids` within the error. */
const hasApiId = (error: unknown, ids: ReadonlySet<string>) =>
  anyWithin(error, (e) => ids.has((e as { apiId?: string }).apiId ?? ""));

const unavailable = (cause: unknown) =>
  new ChronofenceError(ErrorCode.Unavailable, "kafka unavailable", { cause });

const tooLarge = (cause: unknown) =>
  new ChronofenceError(ErrorCode.PayloadTooLarge, "the broker refused a message as too large", {
    cause,
  });
