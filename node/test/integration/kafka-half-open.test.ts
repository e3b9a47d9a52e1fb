/**
 * Kafka clients on a half-open connection (a frozen host, a partition: no
 * reset ever arrives). A test-owned broker advertises a proxy that, once
 * frozen, forwards nothing on the connections it has and keeps them open;
 * requests on them time out. The dispatcher's publisher and the worker's
 * consumer must drop them and connect again, rather than time out on them
 * until the kernel gives up.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type FreezingProxy, freezingProxy } from "./support/freezing-proxy.js";
import { type OwnKafka, ownKafka } from "./support/own-kafka.js";
import { type QueueClients, startQueueClients } from "./support/queue-clients.js";

vi.setConfig({ testTimeout: 120_000 });

let proxy: FreezingProxy;
let kafka: OwnKafka;
let clients: QueueClients;

beforeAll(async () => {
  let brokerPort = 0;
  proxy = await freezingProxy(() => ({ host: "127.0.0.1", port: brokerPort }));
  kafka = await ownKafka({ advertisedPort: proxy.port });
  brokerPort = kafka.port;
  await kafka.start();
  clients = await startQueueClients(kafka.brokers, "half-open");
}, 240_000);

afterAll(async () => {
  await clients?.stop();
  await kafka?.destroy();
  await proxy?.close();
}, 120_000);

describe("Kafka clients on a half-open connection", () => {
  it("the publisher times out once, then connects again and sends; the consumer gets it", async () => {
    const { send, consumed } = clients;
    await send(["before"]);
    await expect.poll(() => consumed.has("before"), { timeout: 30_000 }).toBe(true);
    proxy.freeze();
    // Requests in parallel, as the dispatcher's outbox sends them: all time out on the frozen connection.
    const frozen = await Promise.allSettled([
      send(["frozen-1"]),
      send(["frozen-2"]),
      send(["frozen-3"]),
    ]);
    expect(frozen.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    await expect
      .poll(
        () =>
          send(["after"]).then(
            () => "sent",
            () => "failed",
          ),
        { timeout: 30_000, interval: 500 },
      )
      .toBe("sent");
    await expect.poll(() => consumed.has("after"), { timeout: 60_000, interval: 500 }).toBe(true);
  });
});
