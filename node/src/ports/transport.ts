/**
 * The transport between dispatchers and workers: `Publisher`
 * (ports/publisher.ts) is its publish side, `QueueConsumer` its consume side,
 * and `Transport` makes both, so that a composition root needs to know
 * nothing of what carries the envelopes (Kafka, or the in-process queues of
 * the embedded default).
 *
 * The contract every transport keeps (node/test/contract/transport.contract.ts):
 *  - one queue per topic kind (critical, standard, bulk, overdue); a consumer
 *    of a kind gets only that kind's messages, with the text as published;
 *  - messages published before any consumer started are delivered too;
 *  - at most `maxInFlight` messages handed out and unfinished, not counting
 *    those their handler says are waiting, of which at most `maxWaiting`;
 *  - at least once: a message whose handler did not answer `true` ("commit")
 *    is delivered again, to the next consumer of its queue (Kafka: after a
 *    rebalance or a restart from the last committed offset); one answered
 *    `true` is not delivered again once the consumer stopped.
 */
import type { EnvelopeSource, TopicKind } from "../domain/envelope.js";
import type { Publisher } from "./publisher.js";

/** One message as published and as delivered. */
export interface Message {
  /** The envelope text. */
  readonly value: string;
  /**
   * What the text says, where the publisher built it and the transport
   * carried the message in memory (direct mode): its reader needs neither
   * the text nor a parse, and a transport that keeps the message need not
   * read `value` at all (the outbox builds it only when asked).
   */
  readonly source?: EnvelopeSource;
}

/**
 * Handles one message. Resolves true once it may be committed (its outcome
 * is durable, or there is nothing to do), false if it must be delivered
 * again (the worker is stopping). Never rejects.
 */
export type MessageHandler = (message: Message, delivery: Delivery) => Promise<boolean>;

/**
 * What a handler may tell its consumer about one message it holds. A
 * message `waiting` (for its tenant's slot, or for its run_at) does not
 * count toward `maxInFlight`, so one tenant's backlog cannot stop the
 * messages of every other tenant behind it; such messages are bounded by
 * `maxWaiting` instead. It still holds its queue's commit point (Kafka).
 */
export interface Delivery {
  waiting(isWaiting: boolean): void;
}

/**
 * A Delivery that reports each change of its message's waiting state once
 * (+1 on starting to wait, -1 on stopping); saying the same twice is nothing.
 */
export function countedDelivery(counted: (change: 1 | -1) => void): Delivery {
  let waits = false;
  return {
    waiting(isWaiting: boolean) {
      if (isWaiting === waits) return;
      waits = isWaiting;
      counted(isWaiting ? 1 : -1);
    },
  };
}

export interface QueueConsumer {
  /** Resolves once the consumer receives messages (Kafka: joined its group). */
  start(handle: MessageHandler): Promise<void>;
  /**
   * Stops taking messages; resolves once every message handed out has
   * finished (the caller bounds that, by aborting its handlers) and what
   * was committed is recorded.
   */
  stop(): Promise<void>;
}

export interface ConsumerOptions {
  kind: TopicKind;
  /** Names this consumer to its transport (Kafka's client id). */
  clientId: string;
  /** Messages handed to the handler and not finished yet, at most, not counting those waiting. */
  maxInFlight: number;
  /** Messages handed out and waiting (Delivery.waiting), at most: then the consumer takes no more. */
  maxWaiting: number;
  /** Messages handed out and not yet past their queue's commit point, at most. */
  maxRetained: number;
  onError: (error: unknown) => void;
  /** Receiving (true), or cut off and waiting to receive again (false). */
  onRunning?: (running: boolean) => void;
}

export interface Transport {
  publisher(clientId: string, onError: (error: unknown) => void): Publisher;
  consumer(options: ConsumerOptions): QueueConsumer;
}
