import type { TopicKind } from "../domain/envelope.js";
import type { Message } from "./transport.js";

export interface OutboundMessage extends Message {
  readonly kind: TopicKind;
  /** Kafka key: the tenant id, so a tenant's tasks keep their order within a partition. */
  readonly key: string;
}

/** The transport the dispatcher publishes envelopes to (Kafka). */
export interface Publisher {
  /** Creates the topics if missing (idempotent). */
  ensureTopics(): Promise<void>;
  /**
   * Resolves once the broker acknowledged every message (one request where
   * possible). Rejects with a ChronofenceError: PayloadTooLarge when the
   * broker refused the request for a message's (or the batch's) size, which
   * no retry can change; Unavailable for anything else (try again).
   */
  publish(messages: readonly OutboundMessage[]): Promise<void>;
  close(): Promise<void>;
}
