/**
 * One worker queue over Kafka: a consumer group per topic kind
 * (`<prefix>chronofence-workers.<kind>`), so each priority has its own
 * fetches, its own partitions in flight and its own concurrency — a flood of
 * bulk envelopes never sits in front of a critical one.
 *
 * Messages are handed to the handler as they arrive and the fetch moves on
 * at once, up to `maxInFlight` unfinished messages: kafkajs fetches again
 * only once every batch of the last fetch was handled, so awaiting each
 * outcome there would make one slow handler (or one busy tenant) hold up
 * every partition of the queue, and make each fetch wait for a round trip
 * to Postgres per message.
 *
 * Offsets: committed by us (kafkajs' resolveOffset only moves the fetch
 * position here), every `commitIntervalMs`, and only up to a prefix of
 * messages whose outcome is durable (offset-watermarks.ts): an offset is never
 * committed past a message whose outcome is not yet in Postgres. A crash or
 * a rebalance re-delivers every message after the last committed offset,
 * and fenced starts skip the ones already started.
 */
import { type Consumer, Kafka, logLevel } from "kafkajs";
import { withTimeout } from "../../app/with-timeout.js";
import { type TopicKind, topicName } from "../../domain/envelope.js";
import { OffsetWatermarks } from "./offset-watermarks.js";

export interface TaskConsumerOptions {
  brokers: string[];
  clientId: string;
  topicPrefix: string;
  kind: TopicKind;
  /** Messages handed to the handler and not finished yet, at most. */
  maxInFlight: number;
  /** Messages handed out and not yet past their partition's commit point, at most. */
  maxRetained: number;
  commitIntervalMs: number;
  sessionTimeoutMs: number;
  onError: (error: unknown) => void;
}

/**
 * Handles one message. Resolves true once its offset may be committed
 * (outcome durable, or nothing to do), false if it must stay uncommitted
 * (the worker is stopping). Never rejects.
 */
export type MessageHandler = (value: Buffer | null) => Promise<boolean>;

const FINAL_COMMIT_TIMEOUT_MS = 5000;
/** Heartbeat answers that mean this member must rejoin its group (kafkajs' own isRebalancing). */
const REJOIN_ERRORS = new Set([
  "REBALANCE_IN_PROGRESS",
  "NOT_COORDINATOR_FOR_GROUP",
  "ILLEGAL_GENERATION",
  "UNKNOWN_MEMBER_ID",
]);

export class KafkaTaskConsumer {
  private readonly consumer: Consumer;
  private readonly topic: string;
  private readonly watermarks = new OffsetWatermarks();
  private inFlight = 0;
  private roomWaiters: Array<() => void> = [];
  private stopping = false;
  private commitTimer: NodeJS.Timeout | undefined;
  private committing: Promise<void> = Promise.resolve();

  constructor(private readonly options: TaskConsumerOptions) {
    this.topic = topicName(options.topicPrefix, options.kind);
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
      // An idle fetch returns within this, so a message arriving meanwhile waits less.
      maxWaitTimeInMs: 100,
    });
    this.consumer.on(this.consumer.events.CRASH, (event) => options.onError(event.payload.error));
    // A new generation starts from the committed offsets: what was handed out before is re-delivered.
    this.consumer.on(this.consumer.events.GROUP_JOIN, () => this.watermarks.reset());
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
      topic: this.topic,
      // A new group starts at the beginning: envelopes published before any
      // worker existed still run.
      fromBeginning: true,
    });
    await this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        // A rebalance waits for this batch to return: stop waiting for room when one begins
        // (what was not handed out is fetched again by the partition's next owner).
        let rebalancing = false;
        const beat = setInterval(
          () =>
            heartbeat().catch((error: { type?: string }) => {
              if (!REJOIN_ERRORS.has(error?.type ?? "")) return;
              rebalancing = true;
              this.wakeRoom();
            }),
          Math.max(100, Math.floor(this.options.sessionTimeoutMs / 3)),
        );
        try {
          for (const message of batch.messages) {
            await this.room(() => rebalancing);
            // A revoked partition's messages belong to another member now.
            if (rebalancing || this.stopping || !isRunning() || isStale()) return;
            this.hand(handle, batch.partition, message.offset, message.value);
            resolveOffset(message.offset);
          }
        } finally {
          clearInterval(beat);
        }
      },
    });
    this.commitTimer = setInterval(() => void this.commit(), this.options.commitIntervalMs);
    await joined;
  }

  /**
   * Stops fetching; resolves once every message handed out has finished (the
   * caller bounds that, by aborting its handlers), its offsets are committed
   * and the consumer has left the group.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    try {
      this.consumer.pause([{ topic: this.topic }]);
    } catch (error) {
      // A consumer that crashed and awaits its restart has no group to pause; stopping it is all.
      this.options.onError(error);
    }
    this.wakeRoom();
    try {
      await new Promise<void>((resolve) => {
        const check = () => (this.inFlight === 0 ? resolve() : this.roomWaiters.push(check));
        check();
      });
      // kafkajs retries a commit for minutes while the broker is away; the messages come back instead.
      await withTimeout(this.commit(), FINAL_COMMIT_TIMEOUT_MS);
    } finally {
      clearInterval(this.commitTimer);
      await this.consumer.disconnect().catch((error: unknown) => this.options.onError(error));
    }
  }

  private hand(handle: MessageHandler, partition: number, offset: string, value: Buffer | null) {
    const handout = this.watermarks.begin(partition, offset);
    this.inFlight++;
    void handle(value)
      .then((durable) => {
        if (durable) this.watermarks.done(handout);
      })
      .finally(() => {
        this.inFlight--;
        this.wakeRoom();
      });
  }

  /**
   * Waits while `maxInFlight` messages are unfinished, or `maxRetained` are
   * held behind an unfinished one (a long task holds its partition's commit
   * point; what finished after it is kept until it does): the fetch goes no
   * further ahead.
   */
  private async room(giveUp: () => boolean): Promise<void> {
    while (
      (this.inFlight >= this.options.maxInFlight ||
        this.watermarks.retained >= this.options.maxRetained) &&
      !this.stopping &&
      !giveUp()
    ) {
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
    }
  }

  private wakeRoom(): void {
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const wake of waiters) wake();
  }

  /** One commit at a time; a failed one (a rebalance, a broker away) is tried again next time. */
  private commit(): Promise<void> {
    this.committing = this.committing.then(async () => {
      const commits = this.watermarks.pending();
      if (commits.length === 0) return;
      try {
        await this.consumer.commitOffsets(
          commits.map((c) => ({ topic: this.topic, partition: c.partition, offset: c.offset })),
        );
        this.watermarks.committed(commits);
      } catch (error) {
        this.options.onError(error);
      }
    });
    return this.committing;
  }
}
