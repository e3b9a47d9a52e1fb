/**
 * One worker queue over Kafka: a consumer group per topic kind
 * (`<prefix>chronofence-workers.<kind>`), so each priority has its own
 * fetches, its own partitions in flight and its own concurrency — a flood of
 * bulk envelopes never sits in front of a critical one.
 *
 * Offsets: kafkajs auto-commits only offsets we resolve, and we resolve a
 * message only after its outcome is durable (Executor.execute resolved), and
 * only as a contiguous prefix of its partition: an offset is never committed
 * past a message whose outcome is not yet in Postgres. Messages of a batch
 * run concurrently (within the queue's limits); a crash re-delivers every
 * message after the last committed offset, and fenced starts skip the ones
 * already started.
 */
import { type Consumer, Kafka, logLevel } from "kafkajs";
import { type TopicKind, topicName } from "../../domain/envelope.js";

export interface TaskConsumerOptions {
  brokers: string[];
  clientId: string;
  topicPrefix: string;
  kind: TopicKind;
  /** Partitions of this topic processed at once by this process. */
  partitionsConcurrently: number;
  sessionTimeoutMs: number;
  onError: (error: unknown) => void;
}

/**
 * Handles one message. Resolves true once its offset may be committed
 * (outcome durable, or nothing to do), false if it must stay uncommitted
 * (the worker is stopping). Never rejects.
 */
export type MessageHandler = (value: Buffer | null) => Promise<boolean>;

export class KafkaTaskConsumer {
  private readonly consumer: Consumer;

  constructor(private readonly options: TaskConsumerOptions) {
    const kafka = new Kafka({
      clientId: options.clientId,
      brokers: options.brokers,
      logLevel: logLevel.NOTHING,
      connectionTimeout: 3000,
      requestTimeout: 10_000,
      // Keep trying through a broker restart rather than crash the consumer.
      retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 3000 },
    });
    this.consumer = kafka.consumer({
      groupId: `${options.topicPrefix}chronofence-workers.${options.kind}`,
      sessionTimeout: options.sessionTimeoutMs,
      heartbeatInterval: Math.max(100, Math.floor(options.sessionTimeoutMs / 5)),
      allowAutoTopicCreation: false,
    });
    this.consumer.on(this.consumer.events.CRASH, (event) => options.onError(event.payload.error));
  }

  /** Resolves once this member has joined its group and been given partitions to consume. */
  async start(handle: MessageHandler): Promise<void> {
    const joined = new Promise<void>((resolve) => {
      const stop = this.consumer.on(this.consumer.events.GROUP_JOIN, () => {
        stop();
        resolve();
      });
    });
    await this.consumer.connect();
    await this.consumer.subscribe({
      topic: topicName(this.options.topicPrefix, this.options.kind),
      // A new group starts at the beginning: envelopes published before any
      // worker existed still run.
      fromBeginning: true,
    });
    await this.consumer.run({
      autoCommit: true,
      autoCommitInterval: 200,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.options.partitionsConcurrently,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        const messages = batch.messages;
        const done = new Array<boolean>(messages.length).fill(false);
        let next = 0;
        const beat = setInterval(
          () => heartbeat().catch(() => undefined),
          Math.max(100, Math.floor(this.options.sessionTimeoutMs / 3)),
        );
        try {
          await Promise.all(
            messages.map(async (message, i) => {
              // A revoked partition's messages belong to another member now.
              if (!isRunning() || isStale()) return;
              if (!(await handle(message.value))) return;
              done[i] = true;
              while (next < messages.length && done[next]) {
                resolveOffset(messages[next]!.offset);
                next++;
              }
            }),
          );
        } finally {
          clearInterval(beat);
        }
      },
    });
    await joined;
  }

  /** Stops fetching; resolves when the batches in progress have returned and offsets are committed. */
  async stop(): Promise<void> {
    await this.consumer.disconnect().catch((error: unknown) => this.options.onError(error));
  }
}
