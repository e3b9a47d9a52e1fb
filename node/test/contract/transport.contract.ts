/**
 * The contract of the transport (ports/transport.ts, ports/publisher.ts), as
 * Kafka defines it for Chronofence: one suite, run against every adapter
 * (transport.test.ts). It sees only the ports.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TOPICS, type TopicKind } from "../../src/domain/envelope.js";
import type { Publisher } from "../../src/ports/publisher.js";
import type { MessageHandler, QueueConsumer, Transport } from "../../src/ports/transport.js";

export interface TransportSubject {
  transport: Transport;
  cleanup(): Promise<void>;
}

/** Each consumer start waits for a Kafka group join; a slow machine takes seconds. */
const JOIN_TIMEOUT_MS = 90_000;

async function until(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export function transportContract(name: string, open: () => Promise<TransportSubject>): void {
  describe(`transport contract: ${name}`, () => {
    let subject: TransportSubject;
    let publisher: Publisher;
    const consumers: QueueConsumer[] = [];
    beforeEach(async () => {
      subject = await open();
      publisher = subject.transport.publisher("contract", () => undefined);
      await publisher.ensureTopics();
    });
    afterEach(async () => {
      await Promise.allSettled(consumers.splice(0).map((c) => c.stop()));
      await publisher?.close();
      await subject?.cleanup();
    });

    async function consume(kind: TopicKind, handle: MessageHandler): Promise<QueueConsumer> {
      const consumer = subject.transport.consumer({
        kind,
        clientId: `contract-${kind}`,
        maxInFlight: 16,
        maxWaiting: 16,
        maxRetained: 1000,
        onError: () => undefined,
      });
      consumers.push(consumer);
      await consumer.start(handle);
      return consumer;
    }

    it(
      "delivers each queue's messages to its consumers only, as published, also those published before any consumer",
      async () => {
        const sent = TOPICS.flatMap((kind) =>
          [1, 2, 3].map((n) => ({
            kind,
            key: `tenant-${n % 2}`,
            value: `{"queue":"${kind}","n":${n},"text":"déjà vu ✓"}`,
          })),
        );
        await publisher.publish(sent);
        const received = new Map<TopicKind, string[]>(TOPICS.map((kind) => [kind, []]));
        await Promise.all(
          TOPICS.map((kind) =>
            consume(kind, async ({ value }) => {
              received.get(kind)!.push(value);
              return true;
            }),
          ),
        );
        await until(() => [...received.values()].every((v) => v.length >= 3), "every message");
        for (const kind of TOPICS) {
          expect(received.get(kind)!.sort()).toEqual(
            sent.filter((m) => m.kind === kind).map((m) => m.value),
          );
        }
        // Published while consuming: delivered too.
        await publisher.publish([{ kind: "bulk", key: "tenant-0", value: "late" }]);
        await until(() => received.get("bulk")!.includes("late"), "the late message");
      },
      JOIN_TIMEOUT_MS,
    );

    it(
      "delivers a message not answered 'commit' again, to the next consumer, and a committed one not",
      async () => {
        const first: string[] = [];
        const a = await consume("critical", async ({ value }) => {
          first.push(value);
          return value === "committed";
        });
        await publisher.publish([{ kind: "critical", key: "t", value: "committed" }]);
        await until(() => first.length === 1, "the first message");
        await publisher.publish([{ kind: "critical", key: "t", value: "uncommitted" }]);
        await until(() => first.length === 2, "the second message");
        // The one consumer does not take it again itself.
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(first).toEqual(["committed", "uncommitted"]);
        await a.stop();
        consumers.splice(consumers.indexOf(a), 1);

        const second: string[] = [];
        await consume("critical", async ({ value }) => {
          second.push(value);
          return true;
        });
        await until(() => second.length >= 1, "the redelivery");
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(second).toEqual(["uncommitted"]);
      },
      JOIN_TIMEOUT_MS,
    );
  });
}
