/**
 * "Direct" mode: in a process that runs the dispatcher and the worker, the
 * queues named go through this process's memory (memory-transport.ts), so a
 * fired envelope reaches the worker's executor without a Kafka round trip;
 * the other queues go through the shared transport (Kafka) as before.
 *
 * Fencing is unchanged: the worker starts the task with the envelope's
 * token in Postgres, as it would from Kafka. Durability too: the ARMED row is
 * the durable record, not the envelope. What changes is who recovers a lost
 * envelope. Kafka keeps an envelope through a crash of either process; here
 * it dies with the process, and the reconciler re-arms the task once nobody
 * started it within the dispatch timeout (CF_DISPATCH_TIMEOUT_MS), so a
 * crash delays those tasks by that timeout instead of handing them to
 * another worker at once. And the node's worker runs every task its own
 * dispatcher fires on a direct queue: load spreads over the nodes as their
 * shards do.
 */
import type { TopicKind } from "../../domain/envelope.js";
import type { OutboundMessage, Publisher } from "../../ports/publisher.js";
import type { Transport } from "../../ports/transport.js";

export function directTransport(
  shared: Transport,
  direct: Transport,
  directKinds: ReadonlySet<TopicKind>,
): Transport {
  return {
    publisher(clientId, onError) {
      const toShared = shared.publisher(clientId, onError);
      const toDirect = direct.publisher(clientId, onError);
      return {
        // Every topic still exists: other nodes may publish to the queues this one keeps.
        ensureTopics: () => toShared.ensureTopics(),
        async publish(messages: readonly OutboundMessage[]): Promise<void> {
          const kept = messages.filter((m) => directKinds.has(m.kind));
          const sent =
            kept.length === messages.length ? [] : messages.filter((m) => !directKinds.has(m.kind));
          // A failure rejects the whole batch and the outbox publishes it again: the copies
          // kept here are duplicates that the fenced start refuses.
          await Promise.all([
            kept.length > 0 ? toDirect.publish(kept) : undefined,
            sent.length > 0 ? toShared.publish(sent) : undefined,
          ]);
        },
        close: async () => {
          await Promise.all([toShared.close(), toDirect.close()]);
        },
      } satisfies Publisher;
    },
    consumer: (options) => (directKinds.has(options.kind) ? direct : shared).consumer(options),
  };
}
