/**
 * A half-open Redis connection (the host froze, a partition: no reset ever
 * arrives). A TCP proxy in front of the real Redis stops forwarding on the
 * connections it has, without closing them; the client must drop its socket
 * and reconnect rather than time out every command until the kernel gives up.
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedis } from "../../src/adapters/redis/hot-tier.js";
import { TEST_REDIS_URL } from "./support/services.js";

/** Forwards to Redis; `freeze()` silences every connection open now, and keeps them open. */
function freezingProxy(target: URL) {
  const frozen = new Set<net.Socket>();
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 6379), target.hostname);
    open.add(client);
    client.on("data", (chunk) => {
      if (!frozen.has(client)) upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (!frozen.has(client)) client.write(chunk);
    });
    const end = () => {
      open.delete(client);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  return {
    server,
    listen: () =>
      new Promise<number>((resolve) =>
        server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port)),
      ),
    freeze: () => {
      for (const socket of open) frozen.add(socket);
    },
    close: () => {
      for (const socket of open) socket.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

const proxy = freezingProxy(new URL(TEST_REDIS_URL));
let port: number;

beforeAll(async () => {
  port = await proxy.listen();
});

afterAll(async () => {
  await proxy.close();
});

describe("Redis behind a half-open connection", () => {
  it("reconnects once a pending command gets no answer for the socket timeout", async () => {
    const redis = createRedis({
      url: `redis://127.0.0.1:${port}`,
      keyPrefix: "unused",
      commandTimeoutMs: 200,
      connectTimeoutMs: 1000,
      onError: () => undefined,
    });
    try {
      await redis.connect();
      expect(await redis.ping()).toBe("PONG");
      proxy.freeze();
      await expect(redis.ping()).rejects.toThrow(/timed out/i);
      // The socket timeout (5 s here) drops the silent connection; the new one answers.
      await expect
        .poll(() => redis.ping().catch(() => "no answer"), { timeout: 15_000, interval: 250 })
        .toBe("PONG");
    } finally {
      redis.disconnect();
    }
  });
});
