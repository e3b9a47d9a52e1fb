/**
 * The dispatcher's publisher (node/src/adapters/kafka/kafka-publisher.ts,
 * through kafkajs) written for @platformatic/kafka 1.35.0, for
 * bench:kafka-clients only. It takes 30–40 % less CPU per message, but it is
 * not used, for what it does to messages (kafka-publisher.test.ts holds our
 * publisher to the first two):
 *  - a produce request that spans topics gets wrong record batches: messages
 *    duplicated, and written to other partitions than their key's; so this
 *    sends one request per topic;
 *  - a retried request is sent whole, so the partitions that had taken it
 *    get it again (a leader moving duplicates messages);
 *  - `idempotent: true`, which would stop those duplicates, acknowledges
 *    concurrent sends to a partition without writing them (20 concurrent
 *    batches of 10: 10 written, all 200 acknowledged).
 */
import {
  Admin,
  compatibilityPartitioner,
  ProduceAcks,
  Producer,
  stringSerializers,
  TimeoutError,
} from "@platformatic/kafka";
import type { KafkaOptions } from "../node/src/adapters/kafka/kafka-publisher.js";
import { TOPICS, type TopicKind, topicName } from "../node/src/domain/envelope.js";
import { ChronofenceError, ErrorCode } from "../node/src/domain/errors.js";
import type { OutboundMessage, Publisher } from "../node/src/ports/publisher.js";

type StringProducer = Producer<string, string, string, string>;

export class PlatformaticPublisher implements Publisher {
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
    const topics = TOPICS.map((kind) => this.topicOf(kind));
    try {
      const existing = new Set(await admin.listTopics());
      const missing = topics.filter((t) => !existing.has(t));
      if (missing.length > 0) {
        await admin
          .createTopics({
            topics: missing,
            partitions: this.options.partitions,
            replicas: this.options.replicationFactor,
          })
          .catch((error: unknown) => {
            // Another process creating the same topic at the same time is fine.
            if (!hasApiId(error, ALREADY_EXISTS)) throw error;
          });
      }
      await leadersElected(admin, topics);
    } catch (error) {
      throw unavailable(error);
    } finally {
      await admin.close().catch(() => undefined);
    }
  }

  async publish(messages: readonly OutboundMessage[]): Promise<void> {
    if (messages.length === 0) return;
    // One request per topic (see above). A batch is nearly always of one topic (one priority).
    const byTopic = new Map<string, Array<{ topic: string; key: string; value: string }>>();
    for (const m of messages) {
      const topic = this.topicOf(m.kind);
      const message = { topic, key: m.key, value: m.value };
      const list = byTopic.get(topic);
      if (list) list.push(message);
      else byTopic.set(topic, [message]);
    }
    const producer = this.producer;
    try {
      for (const batch of byTopic.values()) await producer.send({ messages: batch });
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

/**
 * Waits until every partition of `topics` has a leader. A send to a partition
 * without one fails as stale metadata, and the client then sends the whole
 * request again — duplicating what the other partitions had already written.
 */
async function leadersElected(admin: Admin, topics: string[]): Promise<void> {
  const deadline = Date.now() + LEADER_WAIT_MS;
  for (;;) {
    const metadata = await admin.metadata({ topics, forceUpdate: true });
    const led = topics.every((topic) =>
      metadata.topics.get(topic)?.partitions.every((p) => p !== undefined && p.leader >= 0),
    );
    if (led) return;
    if (Date.now() > deadline) throw new Error(`no leader for every partition of ${topics}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const LEADER_WAIT_MS = 30_000;

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
