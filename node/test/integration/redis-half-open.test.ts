/**
 * A half-open Redis connection (the host froze, a partition: no reset ever
 * arrives). A TCP proxy in front of the real Redis stops forwarding on the
 * connections it has, without closing them; the client must drop its socket
 * and reconnect rather than time out every command until the kernel gives up.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedis } from "../../src/adapters/redis/hot-tier.js";
import { type FreezingProxy, freezingProxy } from "./support/freezing-proxy.js";
import { TEST_REDIS_URL } from "./support/services.js";

let proxy: FreezingProxy;

beforeAll(async () => {
  const redis = new URL(TEST_REDIS_URL);
  proxy = await freezingProxy(() => ({ host: redis.hostname, port: Number(redis.port || 6379) }));
});

afterAll(async () => {
  await proxy?.close();
});

describe("Redis behind a half-open connection", () => {
  it("reconnects once a pending command gets no answer for the socket timeout", async () => {
    const redis = createRedis({
      url: `redis://127.0.0.1:${proxy.port}`,
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
