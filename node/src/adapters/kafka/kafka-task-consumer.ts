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
 * to Postgres per message. Messages their handler says are waiting (for a
 * busy tenant's slot, for their run_at) are not counted there but against
 * `maxWaiting`: a tenant that floods the queue with long tasks would
 * otherwise fill `maxInFlight` with its waiters and stop every partition.
 *
 * Offsets: committed by us (kafkajs' resolveOffset only moves the fetch
 * position here), every `commitIntervalMs`, and only up to a prefix of
 * messages whose outcome is durable (offset-watermarks.ts): an offset is never
 * committed past a message whose outcome is not yet in Postgres. A crash or
 * a rebalance re-delivers every message after the last committed offset,
 * and fenced starts skip the ones already started.
 *
 * Crashes: kafkajs restarts a crashed consumer only for errors it deems
 * retriable, and "Failed to find group coordinator" (a broker back up but
 * still loading its offsets) is not one (kafkajs#1445, #1630): the consumer
 * would stay stopped for good while the worker looks healthy. So every crash
 * is restarted here, with a backoff, until stop(). A consumer whose
 * heartbeats have stopped for two session timeouts and whose group is
 * settled without it (at two checks in a row) is stopped and
 * restarted the same way (membership-watch.ts: kafkajs can fetch on after a
 * failed rejoin).
 */
import "./kafkajs-idle-timers.js"; // before kafkajs is used: its idle timers
import { type Consumer, type ConsumerRunConfig, Kafka, logLevel } from "kafkajs";
import { withTimeout } from "../../app/shared/with-timeout.js";
import { type TopicKind, topicName } from "../../domain/envelope.js";
import type { MessageHandler, QueueConsumer } from "../../ports/transport.js";
import { Handouts } from "./handouts.js";
import { MembershipWatch, membershipIn } from "./membership-watch.js";

/** The consumer group of a queue's workers (consumer-lag.ts reads its offsets too). */
export const workerGroupOf = (topicPrefix: string, kind: TopicKind): string =>
  `${topicPrefix}chronofence-workers.${kind}`;

export interface TaskConsumerOptions {
  brokers: string[];
  clientId: string;
  topicPrefix: string;
  kind: TopicKind;
  /** Messages handed to the handler and not finished yet, at most, not counting those waiting. */
  maxInFlight: number;
  /** Messages handed out and waiting (Delivery.waiting), at most (default: no bound of its own). */
  maxWaiting?: number;
  /** Messages handed out and not yet past their partition's commit point, at most. */
  maxRetained: number;
  commitIntervalMs: number;
  sessionTimeoutMs: number;
  /**
   * Caps kafkajs' retries of one operation (by default 30 for the client's
   * connections, 5 for a consumer step); once spent, the consumer crashes and
   * is restarted here.
   */
  retries?: number;
  /** kafkajs' per-request timeout (default 10 s). */
  requestTimeoutMs?: number;
  onError: (error: unknown) => void;
  /** Joined its group (true), or crashed and awaits its restart (false). */
  onRunning?: (running: boolean) => void;
}

const FINAL_COMMIT_TIMEOUT_MS = 5000;
const RESTART_DELAY_MS = { first: 500, max: 10_000 };
/** stop() waits this long at most for a restart under way, so as to disconnect what it started. */
const RESTART_WAIT_MS = 15_000;
/** Heartbeat answers that mean this member must rejoin its group (kafkajs' own isRebalancing). */
const REJOIN_ERRORS = new Set([
  "REBALANCE_IN_PROGRESS",
  "NOT_COORDINATOR_FOR_GROUP",
  "ILLEGAL_GENERATION",
  "UNKNOWN_MEMBER_ID",
]);

export class KafkaTaskConsumer implements QueueConsumer {
  private readonly consumer: Consumer;
  private readonly topic: string;
  private readonly handouts: Handouts;
  private roomWaiters: Array<() => void> = [];
  private stopping = false;
  private commitTimer: NodeJS.Timeout | undefined;
  private committing: Promise<void> = Promise.resolve();
  /** Joined to its group and fetching (false from a crash until the restart joins again). */
  private running = false;
  private restartTimer: NodeJS.Timeout | undefined;
  /** A restart's connect and join, while under way. */
  private restarting: Promise<void> | undefined;
  private restartDelayMs = RESTART_DELAY_MS.first;
  private readonly membership: MembershipWatch;
  /** Our member id in the group, as the last join gave it. */
  private memberId: string | null = null;
  private membershipTimer: NodeJS.Timeout | undefined;
  private checkingMembership = false;
  /** Stopping the consumer to rejoin (forceRejoin): the batch under way gives up waiting for room. */
  private rejoining = false;
  private runConfig: ConsumerRunConfig | undefined;

  constructor(private readonly options: TaskConsumerOptions) {
    this.topic = topicName(options.topicPrefix, options.kind);
    this.handouts = new Handouts(options, () => this.wakeRoom());
    // Checked every session timeout: "gone" twice in a row is enough, whatever the timers' jitter.
    this.membership = new MembershipWatch(
      2 * options.sessionTimeoutMs,
      options.sessionTimeoutMs / 2,
      Date.now(),
    );
    const kafka = new Kafka({
      clientId: options.clientId,
      brokers: options.brokers,
      logLevel: logLevel.NOTHING,
      connectionTimeout: 3000,
      requestTimeout: options.requestTimeoutMs ?? 10_000,
      // Keep trying through a broker restart rather than crash the consumer.
      retry: { retries: options.retries ?? 30, initialRetryTime: 200, maxRetryTime: 3000 },
    });
    this.consumer = kafka.consumer({
      groupId: workerGroupOf(options.topicPrefix, options.kind),
      sessionTimeout: options.sessionTimeoutMs,
      heartbeatInterval: Math.max(100, Math.floor(options.sessionTimeoutMs / 5)),
      allowAutoTopicCreation: false,
      // How long the broker holds a fetch that finds nothing. A message arriving meanwhile
      // ends the wait at once (minBytes 1), so this costs no latency: it sets how often an
      // idle queue's consumer asks. 500 ms rather than 100 took about 0.03 cores off the
      // worker and the broker each near idle (bench/RESULTS.md, session 31); kafkajs also
      // sleeps this long when it has no partition to fetch, and a stop waits for the fetch.
      maxWaitTimeInMs: 500,
      retry: {
        retries: options.retries ?? 5,
        initialRetryTime: 200,
        maxRetryTime: 3000,
        restartOnFailure: async () => false, // restartAfterCrash does, for every crash
      },
    });
    this.consumer.on(this.consumer.events.CRASH, (event) => {
      this.running = false;
      options.onRunning?.(false);
      options.onError(event.payload.error);
      this.restartAfterCrash();
    });
    // kafkajs stops the crashed consumer (no group any more) before it reports the crash.
    this.consumer.on(this.consumer.events.STOP, () => {
      this.running = false;
    });
    this.consumer.on(this.consumer.events.HEARTBEAT, () => this.membership.member(Date.now()));
    this.consumer.on(this.consumer.events.GROUP_JOIN, (event) => {
      // A new generation starts from the committed offsets: what was handed out before is re-delivered.
      this.handouts.watermarks.reset();
      this.memberId = event.payload.memberId;
      this.membership.member(Date.now());
      this.running = true;
      this.restartDelayMs = RESTART_DELAY_MS.first;
      options.onRunning?.(true);
    });
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
    this.runConfig = {
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
            await this.room(() => rebalancing || this.rejoining);
            // A revoked partition's messages belong to another member now.
            if (rebalancing || this.rejoining || this.stopping || !isRunning() || isStale()) return;
            // A tombstone (no value) is not an envelope: the handler skips it as malformed.
            this.handouts.hand(
              handle,
              batch.partition,
              message.offset,
              message.value?.toString("utf8") ?? "",
            );
            resolveOffset(message.offset);
          }
        } finally {
          clearInterval(beat);
        }
      },
    };
    await this.consumer.run(this.runConfig);
    this.commitTimer = setInterval(() => void this.commit(), this.options.commitIntervalMs);
    this.membershipTimer = setInterval(
      () => void this.checkMembership(),
      this.options.sessionTimeoutMs,
    );
    await joined;
  }

  /**
   * Stops fetching; resolves once every message handed out has finished (the
   * caller bounds that, by aborting its handlers), its offsets are committed
   * and the consumer has left the group.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    if (this.restarting) await withTimeout(this.restarting, RESTART_WAIT_MS);
    try {
      this.consumer.pause([{ topic: this.topic }]);
    } catch {
      // Crashed (or being stopped by kafkajs for a crash): no group to pause; stopping it is all.
    }
    this.wakeRoom();
    try {
      await new Promise<void>((resolve) => {
        const check = () =>
          this.handouts.inFlight === 0 ? resolve() : this.roomWaiters.push(check);
        check();
      });
      // kafkajs retries a commit for minutes while the broker is away; the messages come back instead.
      await withTimeout(this.commit(), FINAL_COMMIT_TIMEOUT_MS);
    } finally {
      clearInterval(this.commitTimer);
      clearInterval(this.membershipTimer);
      await this.consumer.disconnect().catch((error: unknown) => this.options.onError(error));
    }
  }

  /**
   * kafkajs has stopped and disconnected the crashed consumer; connect and
   * run it again (the subscription is kept). A failed start crashes again and
   * lands here, later each time.
   */
  private restartAfterCrash(): void {
    if (this.stopping || !this.runConfig) return;
    const runConfig = this.runConfig;
    const delay = this.restartDelayMs;
    this.restartDelayMs = Math.min(delay * 2, RESTART_DELAY_MS.max);
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      if (this.stopping) return;
      this.restarting = (async () => {
        try {
          await this.consumer.connect();
          await this.consumer.run(runConfig);
        } catch (error) {
          this.options.onError(error); // connect failed: no crash event follows, so try again here
          this.restartAfterCrash();
        } finally {
          this.restarting = undefined;
        }
      })();
    }, delay);
  }

  /**
   * Waits while there is no room for another message (Handouts.hasRoom):
   * the fetch goes no further ahead.
   */
  private async room(giveUp: () => boolean): Promise<void> {
    while (!this.handouts.hasRoom() && !this.stopping && !giveUp()) {
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
      const commits = this.handouts.watermarks.pending();
      if (commits.length === 0 || !this.running) return;
      try {
        await this.consumer.commitOffsets(
          commits.map((c) => ({ topic: this.topic, partition: c.partition, offset: c.offset })),
        );
        this.handouts.watermarks.committed(commits);
      } catch (error) {
        this.options.onError(error);
      }
    });
    return this.committing;
  }

  /** Heartbeats have stopped: if the group has settled without this member, rejoin. */
  private async checkMembership(): Promise<void> {
    if (!this.running || this.stopping || this.restarting || this.checkingMembership) return;
    if (!this.membership.silent(Date.now())) return;
    this.checkingMembership = true;
    const askedMs = Date.now();
    try {
      const membership = membershipIn(await this.consumer.describeGroup(), this.memberId);
      if (this.membership.answered(membership, askedMs, Date.now())) this.forceRejoin();
    } catch {
      // The broker is away: nothing to learn about membership; kafkajs reconnects, we ask again.
    } finally {
      this.checkingMembership = false;
    }
  }

  /** The group dropped this member and kafkajs did not rejoin: stop and start again, as after a crash. */
  private forceRejoin(): void {
    if (this.stopping || this.restarting || this.rejoining) return;
    this.rejoining = true;
    this.running = false;
    this.options.onRunning?.(false);
    this.options.onError(
      new Error(
        `kafka consumer ${this.topic}: its group no longer lists it and kafkajs has not rejoined; rejoining`,
      ),
    );
    this.wakeRoom();
    this.restarting = (async () => {
      await withTimeout(this.consumer.stop(), RESTART_WAIT_MS);
      this.rejoining = false;
      this.restarting = undefined;
      this.membership.member(Date.now());
      this.restartAfterCrash();
    })();
  }
}
