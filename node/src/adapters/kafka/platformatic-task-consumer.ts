/**
 * One worker queue over Kafka through @platformatic/kafka, chosen with
 * CF_KAFKA_CONSUMER=platformatic (the default is kafka-task-consumer.ts,
 * through kafkajs). Same group, same flow control, same offsets: messages
 * are handed to the handler as they arrive, the stream is paused while
 * `maxInFlight` are unfinished (not counting those waiting), `maxWaiting`
 * wait or `maxRetained` are held behind an unfinished one, and offsets are
 * committed every `commitIntervalMs`, only up to a prefix of messages whose
 * outcome is durable (offset-watermarks.ts). A new group generation starts
 * from the committed offsets, so what was handed out before is forgotten
 * there and delivered again.
 *
 * Why it exists: kafkajs' consumer adds about 10 ms between a message's
 * acknowledgement and its arrival at 1,000/s, this client about 1
 * (bench:kafka-clients). It is held to the transport contract; the failure
 * tests written for kafkajs (crash restarts, eviction, half-open
 * connections) have not been run on it yet, which is why it is not the
 * default.
 */
import {
  Consumer,
  type MessagesStream,
  MessagesStreamFallbackModes,
  MessagesStreamModes,
  stringDeserializers,
} from "@platformatic/kafka";
import { withTimeout } from "../../app/shared/with-timeout.js";
import { topicName } from "../../domain/envelope.js";
import type { MessageHandler, QueueConsumer } from "../../ports/transport.js";
import { Handouts } from "./handouts.js";
import { type TaskConsumerOptions, workerGroupOf } from "./kafka-task-consumer.js";

type Strings = Consumer<string, string, string, string>;
type StringStream = MessagesStream<string, string, string, string>;

const FINAL_COMMIT_TIMEOUT_MS = 5000;
const RESTART_DELAY_MS = { first: 500, max: 10_000 };

export class PlatformaticTaskConsumer implements QueueConsumer {
  private readonly consumer: Strings;
  private readonly topic: string;
  private readonly handouts: Handouts;
  private stream: StringStream | undefined;
  private finishedWaiters: Array<() => void> = [];
  private stopping = false;
  private running = false;
  private commitTimer: NodeJS.Timeout | undefined;
  private committing: Promise<void> = Promise.resolve();
  private restartTimer: NodeJS.Timeout | undefined;
  private restartDelayMs = RESTART_DELAY_MS.first;

  constructor(private readonly options: TaskConsumerOptions) {
    this.topic = topicName(options.topicPrefix, options.kind);
    this.handouts = new Handouts(options, () => this.changed());
    this.consumer = new Consumer({
      groupId: workerGroupOf(options.topicPrefix, options.kind),
      clientId: options.clientId,
      bootstrapBrokers: options.brokers,
      deserializers: stringDeserializers,
      autocommit: false,
      // An idle fetch returns within this, so a message arriving meanwhile waits less.
      maxWaitTime: 100,
      sessionTimeout: options.sessionTimeoutMs,
      heartbeatInterval: Math.max(100, Math.floor(options.sessionTimeoutMs / 5)),
      connectTimeout: 3000,
      timeout: options.requestTimeoutMs ?? 10_000,
      retries: options.retries ?? 30,
      retryDelay: 200,
    });
    this.consumer.on("consumer:group:join", () => {
      // A new generation starts from the committed offsets: what was handed out before is re-delivered.
      this.handouts.watermarks.reset();
      this.setRunning(true);
      this.restartDelayMs = RESTART_DELAY_MS.first;
    });
    this.consumer.on("consumer:group:rebalance", () => this.setRunning(false));
  }

  /** Resolves once this member has joined its group and fetches. */
  async start(handle: MessageHandler): Promise<void> {
    await this.consume(handle);
    this.commitTimer = setInterval(() => void this.commit(), this.options.commitIntervalMs);
  }

  /**
   * Stops fetching; resolves once every message handed out has finished (the
   * caller bounds that, by aborting its handlers), its offsets are committed
   * and the consumer has left the group.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    this.stream?.pause();
    try {
      await new Promise<void>((resolve) => {
        const check = () =>
          this.handouts.inFlight === 0 ? resolve() : this.finishedWaiters.push(check);
        check();
      });
      await withTimeout(this.commit(), FINAL_COMMIT_TIMEOUT_MS);
    } finally {
      clearInterval(this.commitTimer);
      await this.stream?.close().catch(() => undefined);
      await this.consumer.close().catch((error: unknown) => this.options.onError(error));
    }
  }

  private async consume(handle: MessageHandler): Promise<void> {
    const stream = await this.consumer.consume({
      topics: [this.topic],
      // A new group starts at the beginning: envelopes published before any worker existed still run.
      mode: MessagesStreamModes.COMMITTED,
      fallbackMode: MessagesStreamFallbackModes.EARLIEST,
      autocommit: false,
    });
    this.stream = stream;
    stream.on("data", (message) => {
      // A tombstone (no value) is not an envelope: the handler skips it as malformed.
      this.handouts.hand(handle, message.partition, message.offset.toString(), message.value ?? "");
      if (!this.handouts.hasRoom()) stream.pause();
    });
    stream.once("error", (error: unknown) => {
      this.options.onError(error);
      this.setRunning(false);
      this.restartAfterError(handle, stream);
    });
    this.setRunning(true);
  }

  /** The stream failed for good: close it and consume again, later each time, until stop(). */
  private restartAfterError(handle: MessageHandler, failed: StringStream): void {
    if (this.stopping) return;
    const delay = this.restartDelayMs;
    this.restartDelayMs = Math.min(delay * 2, RESTART_DELAY_MS.max);
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(async () => {
      await failed.close().catch(() => undefined);
      if (this.stopping) return;
      try {
        await this.consume(handle);
      } catch (error) {
        this.options.onError(error);
        this.restartAfterError(handle, failed);
      }
    }, delay);
  }

  /** Room may have opened: wake stop()'s wait, resume a paused stream. */
  private changed(): void {
    const waiters = this.finishedWaiters;
    this.finishedWaiters = [];
    for (const wake of waiters) wake();
    const stream = this.stream;
    if (stream && !this.stopping && stream.isPaused() && this.handouts.hasRoom()) stream.resume();
  }

  /** One commit at a time; a failed one (a rebalance, a broker away) is tried again next time. */
  private commit(): Promise<void> {
    this.committing = this.committing.then(async () => {
      const commits = this.handouts.watermarks.pending();
      if (commits.length === 0 || !this.running) return;
      try {
        await this.consumer.commit({
          offsets: commits.map((c) => ({
            topic: this.topic,
            partition: c.partition,
            offset: BigInt(c.offset),
            leaderEpoch: -1,
          })),
        });
        this.handouts.watermarks.committed(commits);
      } catch (error) {
        this.options.onError(error);
      }
    });
    return this.committing;
  }

  private setRunning(running: boolean): void {
    if (running === this.running) return;
    this.running = running;
    this.options.onRunning?.(running);
  }
}
