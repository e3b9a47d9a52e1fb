/**
 * The transport in the process's memory, for the embedded default
 * (`chronofence dev`): one FIFO queue per topic kind; the dispatcher's
 * publish appends the envelope and resolves at once (the "broker's
 * ack"); the worker's consumers of a kind take from its queue. Held to
 * Kafka's behaviour by one contract suite (node/test/contract/transport.contract.ts):
 *
 *  - at least once, as Kafka's uncommitted offsets: a message whose handler
 *    answered false stays with its consumer, which does not take it again;
 *    when that consumer stops, it goes back to the front of the queue for
 *    the next consumer. (A handler answers false only while its worker
 *    stops.)
 *  - the queue keeps what nobody consumes yet, as a new consumer group
 *    starts at the beginning of its topic.
 *  - `maxInFlight` bounds the messages a consumer has handed out and not
 *    finished, not counting those their handler says are waiting, which
 *    `maxWaiting` bounds; `maxRetained` does not apply: there is no commit
 *    point that a long task could hold back.
 *  - nothing survives the process. That loses no task: the ARMED row in
 *    Postgres is the durable record, and the reconciler re-arms a task
 *    nobody started (docs/architecture.md, section 6, step 10).
 *
 * It is also the seam of a "direct" mode: a process running the dispatcher
 * and the worker hands each fired envelope to its own executor.
 */
import type { TopicKind } from "../../domain/envelope.js";
import type { OutboundMessage, Publisher } from "../../ports/publisher.js";
import {
  type ConsumerOptions,
  countedDelivery,
  type Message,
  type MessageHandler,
  type QueueConsumer,
  type Transport,
} from "../../ports/transport.js";

/**
 * Holds the messages as published: an envelope from this process's outbox
 * keeps what it says (`source`), and its text is never built.
 */
class MemoryQueue {
  private waiting: Message[] = [];
  private head = 0;
  readonly consumers = new Set<MemoryQueueConsumer>();
  private pumping = false;

  take(): Message | undefined {
    if (this.head === this.waiting.length) return undefined;
    const value = this.waiting[this.head++]!;
    // Drop the taken prefix now and then rather than shift() (O(n)) each time.
    if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting.splice(0, this.head);
      this.head = 0;
    }
    return value;
  }

  append(messages: readonly Message[]): void {
    for (const message of messages) this.waiting.push(message);
    this.schedulePump();
  }

  /** Messages given back by a stopped consumer go first, in their order. */
  giveBack(messages: readonly Message[]): void {
    this.waiting = messages.concat(this.waiting.slice(this.head));
    this.head = 0;
    this.schedulePump();
  }

  /** After the publisher's call returns: a handler never runs inside publish(). */
  schedulePump(): void {
    if (this.pumping) return;
    this.pumping = true;
    queueMicrotask(() => {
      this.pumping = false;
      for (const consumer of this.consumers) consumer.pump();
    });
  }
}

class MemoryQueueConsumer implements QueueConsumer {
  private handle: MessageHandler | undefined;
  private inFlight = 0;
  /** Of `inFlight`, those whose handler said they wait. */
  private waiting = 0;
  private stopping = false;
  /** Answered false: delivered again to the next consumer once this one stops. */
  private readonly uncommitted: Message[] = [];
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly queue: MemoryQueue,
    private readonly options: ConsumerOptions,
  ) {}

  async start(handle: MessageHandler): Promise<void> {
    this.handle = handle;
    this.queue.consumers.add(this);
    this.options.onRunning?.(true);
    this.pump();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.queue.consumers.delete(this);
    if (this.inFlight > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    if (this.uncommitted.length > 0) this.queue.giveBack(this.uncommitted.splice(0));
  }

  pump(): void {
    const handle = this.handle;
    if (!handle) return;
    while (
      !this.stopping &&
      this.inFlight - this.waiting < this.options.maxInFlight &&
      this.waiting < this.options.maxWaiting
    ) {
      const message = this.queue.take();
      if (message === undefined) return;
      this.inFlight++;
      const delivery = countedDelivery((change) => {
        this.waiting += change;
        if (change > 0) queueMicrotask(() => this.pump()); // its slot is free for the next
      });
      void handle(message, delivery)
        .catch((error: unknown) => {
          this.options.onError(error); // the contract says never; keep the message if it does
          return false;
        })
        .then((commit) => {
          delivery.waiting(false);
          if (!commit) this.uncommitted.push(message);
          this.inFlight--;
          if (this.inFlight === 0) for (const wake of this.idleWaiters.splice(0)) wake();
          this.pump();
        });
    }
  }
}

export class MemoryTransport implements Transport {
  private readonly queues = new Map<TopicKind, MemoryQueue>();

  publisher(): Publisher {
    return {
      ensureTopics: async () => undefined,
      publish: async (messages: readonly OutboundMessage[]) => {
        const byKind = new Map<TopicKind, OutboundMessage[]>();
        for (const m of messages) {
          const list = byKind.get(m.kind);
          if (list) list.push(m);
          else byKind.set(m.kind, [m]);
        }
        for (const [kind, list] of byKind) this.queue(kind).append(list);
      },
      close: async () => undefined,
    };
  }

  consumer(options: ConsumerOptions): QueueConsumer {
    return new MemoryQueueConsumer(this.queue(options.kind), options);
  }

  private queue(kind: TopicKind): MemoryQueue {
    let queue = this.queues.get(kind);
    if (!queue) {
      queue = new MemoryQueue();
      this.queues.set(kind, queue);
    }
    return queue;
  }
}
