/**
 * Redis is a cache of Postgres (docs/architecture.md, invariant 2): a real FLUSHALL in the
 * middle of a run loses no acknowledged task. The test runs its own
 * redis-server, so the flush touches no other test's keys.
 */
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/adapters/clock/system-clock.js";
import type { Config } from "../../src/config/config.js";
import { type RunningRoles, startDispatchRoles } from "../../src/main/dispatch.js";
import {
  type ApiFixture,
  call,
  startApiFixture,
  type TestApi,
  type TestTenant,
} from "./support/api.js";
import { newTopicPrefix, requireKafka, TestConsumer } from "./support/kafka.js";
import { type OwnRedis, startOwnRedis } from "./support/redis-server.js";

let fixture: ApiFixture;
let ownRedis: OwnRedis;
let config: Config;
let api: TestApi;
let roles: RunningRoles;
let consumer: TestConsumer;
let tenant: TestTenant;

beforeAll(async () => {
  await requireKafka();
  ownRedis = await startOwnRedis();
  fixture = await startApiFixture({
    redisUrl: ownRedis.url,
    topicPrefix: newTopicPrefix("flush"),
    metricsPort: 0,
    kafkaPartitions: 2,
    leaseTtlMs: 3000,
    leaseHeartbeatMs: 300,
    leaseSafetyMarginMs: 500,
    claimIntervalMs: 50,
    claimLookaheadMs: 1000,
    reconcileIntervalMs: 200,
    reconcileAheadMs: 10_000,
  });
  ({ config, api, tenant } = fixture);
  consumer = new TestConsumer(config.topicPrefix);
  await consumer.start();
  roles = await startDispatchRoles(
    config,
    systemClock,
    pino({ level: process.env.CF_TEST_LOG_LEVEL ?? "silent" }),
    new Set(["dispatcher", "preloader", "reconciler"]),
  );
});

afterAll(async () => {
  await roles?.stop();
  await consumer?.stop();
  await fixture?.stop();
  await ownRedis?.stop();
});

describe("Redis FLUSHALL in the middle of a run", () => {
  it("still publishes every acknowledged task, none early", async () => {
    const tasks: Array<{ id: string; runAtMs: number }> = [];
    for (let i = 0; i < 60; i++) {
      const answer = await call(api.baseUrl, "POST", "/v1/tasks", {
        key: tenant.apiKey,
        body: { type: "flush", delay_ms: 500 + i * 60 },
      });
      expect(answer.status).toBe(201);
      tasks.push({ id: answer.body.id, runAtMs: Date.parse(answer.body.run_at) });
    }
    const published = () => tasks.filter((t) => consumer.ofTask(t.id).length > 0).length;
    await expect.poll(published, { timeout: 15_000 }).toBeGreaterThanOrEqual(10);
    const redis = new Redis(ownRedis.url);
    expect(await redis.dbsize()).toBeGreaterThan(0);
    await redis.flushall();
    redis.disconnect();
    expect(published()).toBeLessThan(tasks.length);

    await expect.poll(published, { timeout: 20_000 }).toBe(tasks.length);
    for (const task of tasks) {
      for (const m of consumer.ofTask(task.id)) {
        expect(m.arrivedAtMs).toBeGreaterThanOrEqual(task.runAtMs);
        expect(Date.parse(m.envelope.dispatched_at)).toBeGreaterThanOrEqual(task.runAtMs);
      }
    }
  }, 60_000); // more than its two waits (15 s and 20 s): a wait's own message is what fails
});
