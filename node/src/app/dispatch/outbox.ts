/**
 * The publish side of the dispatcher: tasks the wheel fired in one turn of
 * the event loop leave in one produce request, and while `maxInFlight`
 * requests are out, newly fired tasks wait and leave together in the next.
 * A broker serves one connection's requests one at a time, so many tiny
 * requests queue behind each other; this batches exactly as much as the
 * broker's own latency makes necessary, and adds no wait when it is idle —
 * unless `lingerMs` asks for one: then a request leaves that long after its
 * first task, with every task fired meanwhile, so a light load sends fewer,
 * fuller requests (and acknowledges fewer claims) for that much latency.
 * Under load (the last request carried `BUSY_REQUEST_TASKS` or more) it
 * waits `busyLingerMs` instead: Kafka mode pays per request (the broker's
 * work, the workers' fetches and turns), and a busy dispatcher sends fewer
 * of them for a few ms more, while a light load keeps its short wait.
 * After the broker acknowledges, their claims are removed from Redis with the
 * next claim round (ClaimAcks). A failed request is retried
 * after a short pause, each task only while its shard's lease still holds —
 * otherwise it is dropped, and the shard's new owner publishes it.
 *
 * An envelope the broker can never accept is no reason to retry: one larger
 * than `maxMessageBytes` is not sent, and a request the broker refuses as too
 * large is split in halves until the refused envelopes stand alone. Those
 * tasks are buried — DEAD with the reason, a dead letter, fenced by their
 * token (UndeliverableTasks) — and the rest of their batch is published.
 */
import {
  type ArmedTask,
  checkEnvelope,
  type EnvelopeSource,
  envelopeCharsAtMost,
  envelopeJson,
  type TopicKind,
  topicKindOf,
} from "../../domain/envelope.js";
import { ErrorCode, isChronofenceError } from "../../domain/errors.js";
import { utf8ByteLength } from "../../domain/json-limits.js";
import type { Clock } from "../../ports/clock.js";
import type { DispatchHotTier } from "../../ports/dispatch-hot-tier.js";
import type { DispatchMetrics } from "../../ports/dispatch-metrics.js";
import type { UndeliverableTasks } from "../../ports/dispatch-store.js";
import type { ExecutionFailure } from "../../ports/execution-store.js";
import type { OutboundMessage, Publisher } from "../../ports/publisher.js";
import { ClaimAcks } from "./claim-acks.js";

export interface OutgoingTask {
  task: ArmedTask;
  shard: number;
  epoch: number;
  /** Still allowed to publish for this shard? Checked again before a retry. */
  stillHolds: () => boolean;
  /** Called once the task left (published) or was dropped. */
  settled: () => void;
}

export interface OutboxOptions {
  nodeId: string;
  /** Produce requests out at once. */
  maxInFlight: number;
  /** Most tasks per produce request. */
  maxBatchTasks: number;
  /** About the most envelope bytes per produce request (below the broker's message.max.bytes). */
  maxBatchBytes: number;
  /** The largest envelope the broker accepts (its message.max.bytes, less the record's overhead). */
  maxMessageBytes: number;
  retryDelayMs: number;
  /** Wait this long after a batch's first task before sending it (0: the next turn of the event loop). */
  lingerMs?: number;
  /**
   * The wait instead while the load is high (the last request carried BUSY_REQUEST_TASKS or
   * more; default: lingerMs). A stretch of the linger: with lingerMs 0 nothing waits, busy or not.
   */
  busyLingerMs?: number;
  onError: (error: unknown, what: string) => void;
}

/**
 * A request this full means the load is high: at 5,000 tasks/s a 2 ms linger
 * gave about 25 tasks a request, at 1,000/s about 4 (bench/RESULTS.md,
 * session 31).
 */
export const BUSY_REQUEST_TASKS = 16;

export class Outbox {
  private pending: OutgoingTask[] = [];
  private flushScheduled = false;
  private inFlight = 0;
  private requestsInFlight = 0;
  /** Tasks the last request took: the load, as the linger sees it. */
  private lastRequestTasks = 0;
  /** Claims of what left, to be forgotten with the next claim round. */
  readonly acks: ClaimAcks;

  constructor(
    private readonly publisher: Publisher,
    private readonly undeliverable: UndeliverableTasks,
    private readonly hotTier: DispatchHotTier,
    private readonly clock: Clock,
    private readonly metrics: DispatchMetrics,
    private readonly options: OutboxOptions,
  ) {
    this.acks = new ClaimAcks(hotTier, options.onError);
  }

  get size(): number {
    return this.pending.length + this.inFlight;
  }

  add(item: OutgoingTask): void {
    this.pending.push(item);
    this.scheduleFlush(true);
  }

  /**
   * `fresh`: tasks just fired. Without a linger they leave in a microtask: the wheel fires a
   * wake's tasks in one synchronous run, so they all join one request, and it leaves before
   * the loop turns to anything else (a setImmediate waited for every I/O callback of the turn
   * and the immediates before it). A follow-up request, for what did not fit or waited for a
   * free slot, yields to the loop first: in direct mode a publish resolves at once, and a
   * backlog sent from microtasks alone would hold the loop until all of it was handed over.
   */
  private scheduleFlush(fresh = false): void {
    if (this.flushScheduled || this.pending.length === 0) return;
    if (this.requestsInFlight >= this.options.maxInFlight) return; // the next completion flushes
    this.flushScheduled = true;
    const flush = () => {
      this.flushScheduled = false;
      void this.flush().finally(() => {
        this.requestsInFlight--;
        this.scheduleFlush();
      });
    };
    const lingerMs = this.lingerMs();
    if (lingerMs > 0 && this.pending.length < this.options.maxBatchTasks)
      setTimeout(flush, lingerMs);
    else if (fresh) queueMicrotask(flush);
    else setImmediate(flush);
  }

  private lingerMs(): number {
    const { lingerMs = 0, busyLingerMs = lingerMs } = this.options;
    return lingerMs > 0 && this.lastRequestTasks >= BUSY_REQUEST_TASKS ? busyLingerMs : lingerMs;
  }

  private async flush(): Promise<void> {
    this.requestsInFlight++;
    const taken = this.takeBatch();
    this.lastRequestTasks = taken.length;
    this.scheduleFlush(); // the rest, if any, in a parallel request
    const { batch, messages, oversized } = this.envelopes(taken);
    await Promise.all([this.send(batch, messages), this.bury(oversized)]);
  }

  /** One produce request; a refusal for size splits it (see the header), anything else retries. */
  private async send(batch: OutgoingTask[], messages: OutboundMessage[]): Promise<void> {
    if (batch.length === 0) return;
    this.inFlight += batch.length;
    try {
      await this.publisher.publish(messages);
    } catch (error) {
      this.inFlight -= batch.length;
      if (isChronofenceError(error) && error.code === ErrorCode.PayloadTooLarge) {
        if (batch.length === 1) return this.bury(batch);
        const half = Math.ceil(batch.length / 2);
        await this.send(batch.slice(0, half), messages.slice(0, half));
        return this.send(batch.slice(half), messages.slice(half));
      }
      this.metrics.publishFailed(batch.length);
      this.options.onError(error, "publish");
      setTimeout(() => this.retry(batch), this.options.retryDelayMs).unref();
      return;
    }
    this.inFlight -= batch.length;
    const ackedMs = this.clock.nowMs();
    for (let i = 0; i < batch.length; i++) {
      const { task } = batch[i]!;
      if (messages[i]!.kind === "overdue") this.metrics.overdue();
      this.metrics.published(messages[i]!.kind, ackedMs - task.runAtMs);
      batch[i]!.settled();
    }
    this.ack(batch);
  }

  /**
   * A task whose envelope cannot be built is dropped and reported, not sent
   * with the batch (that would fail every other task in it, on every retry).
   * Its claim expires back to due; the reconciler re-arms it after the
   * dispatch timeout, and it is reported again. One larger than the broker
   * accepts is set aside to be buried.
   */
  private envelopes(taken: OutgoingTask[]): {
    batch: OutgoingTask[];
    messages: EnvelopeMessage[];
    oversized: OutgoingTask[];
  } {
    const nowMs = this.clock.nowMs();
    const batch: OutgoingTask[] = [];
    const messages: EnvelopeMessage[] = [];
    const oversized: OutgoingTask[] = [];
    for (const item of taken) {
      try {
        const message = this.messageOf(item, nowMs);
        // A UTF-16 unit is at most three UTF-8 bytes: build the text and count its bytes only
        // when the bound says it might matter.
        const large = envelopeCharsAtMost(message.source) * 3 > this.options.maxMessageBytes;
        if (large && utf8ByteLength(message.value) > this.options.maxMessageBytes) {
          oversized.push(item);
          continue;
        }
        messages.push(message);
        batch.push(item);
      } catch (error) {
        this.options.onError(error, `envelope of task ${item.task.id}`);
        item.settled();
      }
    }
    return { batch, messages, oversized };
  }

  /**
   * DEAD with the reason (fenced by each task's token), their claims
   * forgotten, released workflow nodes to the hot tier. If Postgres is away
   * the tasks stay ARMED: their claims expire back to due and they come round
   * again (at the claim TTL's pace, not the retry delay's).
   */
  private async bury(items: OutgoingTask[]): Promise<void> {
    if (items.length === 0) return;
    const failure: ExecutionFailure = {
      message: `the envelope is larger than the broker accepts (${this.options.maxMessageBytes} bytes, CF_KAFKA_MAX_MESSAGE_BYTES, or the broker's own limit); it can never be published`,
      code: "message_too_large",
      retryable: false,
    };
    try {
      const tasks = items.map((i) => i.task);
      const { buried, released } = await this.undeliverable.bury(
        tasks,
        failure,
        this.clock.nowMs(),
      );
      this.metrics.undeliverable(buried.length);
      const ids = items.map((i) => i.task.id).join(", ");
      this.options.onError(new Error(`${failure.message}: ${ids}`), "publish (undeliverable)");
      // Only the claims of what was buried: a task re-armed meanwhile is its new owner's.
      const done = new Set(buried);
      this.ack(items.filter((i) => done.has(i.task.id)));
      if (released.length > 0) {
        await this.hotTier
          .addDue(released)
          .catch((error: unknown) => this.options.onError(error, "add released nodes"));
      }
    } catch (error) {
      this.options.onError(error, "bury undeliverable tasks");
    } finally {
      for (const item of items) item.settled();
    }
  }

  /** Up to maxBatchTasks and about maxBatchBytes of payload: a broker refuses larger record batches. */
  private takeBatch(): OutgoingTask[] {
    let bytes = 0;
    let count = 0;
    while (count < this.pending.length && count < this.options.maxBatchTasks) {
      bytes += this.pending[count]!.task.payloadJson.length + 512;
      if (count > 0 && bytes > this.options.maxBatchBytes) break;
      count++;
    }
    return this.pending.splice(0, count);
  }

  private retry(batch: OutgoingTask[]): void {
    for (const item of batch) {
      if (item.stillHolds()) this.add(item);
      else item.settled();
    }
  }

  /** Published (or buried): their claims go with the next claim round (ClaimAcks). */
  private ack(batch: OutgoingTask[]): void {
    for (const item of batch)
      this.acks.add(item, { taskId: item.task.id, runAtMs: item.task.runAtMs });
  }

  private messageOf(item: OutgoingTask, nowMs: number): EnvelopeMessage {
    const { task, shard, epoch } = item;
    const source = {
      task,
      dispatchedAtMs: nowMs,
      origin: { nodeId: this.options.nodeId, shard, epoch },
    };
    checkEnvelope(source);
    return new EnvelopeMessage(topicKindOf(task, nowMs), source);
  }
}

/** An envelope whose text is built the first time it is read: a transport in memory never does. */
class EnvelopeMessage implements OutboundMessage {
  private text: string | undefined;

  constructor(
    readonly kind: TopicKind,
    readonly source: EnvelopeSource,
  ) {}

  get key(): string {
    return this.source.task.tenantId;
  }

  get value(): string {
    const { task, dispatchedAtMs, origin } = this.source;
    this.text ??= envelopeJson(task, dispatchedAtMs, origin);
    return this.text;
  }
}
