/**
 * The worker's consumer after a crash (a test-owned broker, never the shared
 * one). With one retry per operation, a broker outage crashes the kafkajs
 * consumer; kafkajs itself restarts only some crashes and leaves the rest
 * stopped for good, so KafkaTaskConsumer restarts every one: once the broker
 * is back, messages published after the outage are handled.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type OwnKafka, ownKafka } from "./support/own-kafka.js";
import { type QueueClients, startQueueClients } from "./support/queue-clients.js";

vi.setConfig({ testTimeout: 240_000 });

let kafka: OwnKafka;
let clients: QueueClients;
const errors: unknown[] = [];
const running: boolean[] = [];

beforeAll(async () => {
  kafka = await ownKafka();
  await kafka.start();
  clients = await startQueueClients(kafka.brokers, "consumer-crash", {
    onError: (error) => errors.push(error),
    onRunning: (up) => running.push(up),
  });
}, 240_000);

afterAll(async () => {
  await clients?.stop();
  await kafka?.destroy();
}, 120_000);

/** Publishes, retrying while the broker is still coming back. */
async function publish(values: string[]): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await clients.send(values);
    } catch (error) {
      if (attempt >= 20) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

const named = (prefix: string) => Array.from({ length: 10 }, (_, i) => `${prefix}${i}`);
const allHandled = (values: string[]) => values.every((v) => clients.consumed.has(v));

describe("the worker's Kafka consumer", () => {
  it("consumes again after a crash that kafkajs would not restart", async () => {
    await publish(named("before-"));
    await expect.poll(() => allHandled(named("before-")), { timeout: 30_000 }).toBe(true);

    await kafka.stop();
    // The crash is reported (its retries spent, a fetch or heartbeat gives up).
    await expect.poll(() => errors.length, { timeout: 60_000, interval: 250 }).toBeGreaterThan(0);
    await kafka.start();

    await publish(named("after-"));
    await expect
      .poll(() => allHandled(named("after-")), { timeout: 120_000, interval: 250 })
      .toBe(true);
    // Up at the start, down at the crash, up again once the restart joined.
    expect(running[0]).toBe(true);
    expect(running.indexOf(false)).toBeGreaterThan(0);
    expect(running.at(-1)).toBe(true);
  });
});
