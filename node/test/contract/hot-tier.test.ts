/** The hot-tier contract, against Redis (its own key prefix) and the in-process hot tier. */
import { randomBytes } from "node:crypto";
import { MemoryHotTier } from "../../src/adapters/memory/memory-hot-tier.js";
import { RedisDispatchHotTier } from "../../src/adapters/redis/dispatch-hot-tier.js";
import { createRedis, RedisHotTier } from "../../src/adapters/redis/hot-tier.js";
import { deleteRedisKeys, requireRedis, TEST_REDIS_URL } from "../integration/support/services.js";
import { hotTierContract } from "./hot-tier.contract.js";

hotTierContract("redis", async () => {
  await requireRedis();
  const prefix = `cf-test-contract-${randomBytes(4).toString("hex")}`;
  const redis = createRedis({
    url: TEST_REDIS_URL,
    keyPrefix: prefix,
    commandTimeoutMs: 2000,
    connectTimeoutMs: 2000,
    onError: () => undefined,
  });
  const hot = new RedisHotTier(redis, prefix);
  await hot.connect();
  return {
    hot,
    dispatch: new RedisDispatchHotTier(redis, prefix),
    vouchesForContents: true,
    async cleanup() {
      await hot.close();
      await deleteRedisKeys(prefix);
    },
  };
});

hotTierContract("in process", async () => {
  const tier = new MemoryHotTier();
  return { hot: tier, dispatch: tier, vouchesForContents: false, cleanup: async () => undefined };
});
