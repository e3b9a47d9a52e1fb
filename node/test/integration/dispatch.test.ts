/**
 * The dispatcher on the real Postgres, Redis and Kafka, in-process: tasks go
 * out at their run_at (never before), on the topic of their priority, with a
 * well-formed envelope; cancelled ones never; late ones to tasks.overdue.
 */
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/adapters/clock/system-clock.js";
import type { Config } from "../../src/config/config.js";
import { dueKey, shardOf } from "../../src/domain/shard.js";
import { type RunningRoles, startDispatchRoles } from "../../src/main/dispatch.js";
import {
  type ApiFixture,
  call,
  startApiFixture,
  type TestApi,
  type TestTenant,
} from "./support/api.js";
import { newTopicPrefix, requireKafka, TestConsumer } from "./support/kafka.js";
import { TEST_REDIS_URL, type TestDatabase, untilDue, withPg } from "./support/services.js";
import { waitUntil } from "./support/wait.js";

let fixture: ApiFixture;
let db: TestDatabase;
let config: Config;
let api: TestApi;
let roles: RunningRoles;
let consumer: TestConsumer;
let tenant: TestTenant;
let redis: Redis;

beforeAll(async () => {
  await requireKafka();
  fixture = await startApiFixture({
    topicPrefix: newTopicPrefix("dispatch"),
    metricsPort: 0,
    kafkaPartitions: 2,
    leaseTtlMs: 3000,
    leaseHeartbeatMs: 300,
    leaseSafetyMarginMs: 500,
    claimIntervalMs: 50,
    claimLookaheadMs: 1000,
  });
  ({ db, config, api, tenant } = fixture);
  consumer = new TestConsumer(config.topicPrefix);
  await consumer.start();
  redis = new Redis(TEST_REDIS_URL);
  roles = await startDispatchRoles(
    config,
    systemClock,
    pino({ level: process.env.CF_TEST_LOG_LEVEL ?? "silent" }),
    new Set(["dispatcher", "preloader", "reconciler"]),
  );
  // All 16 shards are ours once the first heartbeat has run.
  await waitUntil(
    "16 shard leases",
    () => shardsOwnedBy(roles.nodeId),
    (n) => n === 16,
  );
});

afterAll(async () => {
  await roles?.stop();
  await consumer?.stop();
  redis?.disconnect();
  await fixture?.stop();
});

const shardsOwnedBy = (owner: string) =>
  withPg(db.url, async (c) =>
    Number(
      (
        await c.query(
          "SELECT count(*) AS n FROM leases WHERE name LIKE 'shard:%' AND owner = $1 AND expires_at > now()",
          [owner],
        )
      ).rows[0].n,
    ),
  );

async function submit(body: Record<string, unknown>): Promise<{ id: string; runAtMs: number }> {
  const answer = await call(api.baseUrl, "POST", "/v1/tasks", { key: tenant.apiKey, body });
  expect(answer.status).toBe(201);
  return { id: answer.body.id, runAtMs: Date.parse(answer.body.run_at) };
}

const statusOf = (id: string) =>
  withPg(
    db.url,
    async (c) =>
      (await c.query("SELECT status, fencing_token::text AS token FROM tasks WHERE id = $1", [id]))
        .rows[0] as { status: string; token: string | null },
  );

describe("dispatcher", () => {
  it("publishes each task at its run_at, never before, on its priority's topic, with a well-formed envelope", async () => {
    const tasks = await Promise.all(
      (["critical", "standard", "bulk"] as const).flatMap((priority, p) =>
        [0, 1, 2].map(async (i) => ({
          priority,
          ...(await submit({
            type: `send.${priority}`,
            payload: { n: i, text: "héllo" },
            priority,
            delay_ms: 1200 + p * 150 + i * 97,
            idempotency_key: `k-${priority}-${i}`,
          })),
        })),
      ),
    );
    await expect
      .poll(() => tasks.every((t) => consumer.ofTask(t.id).length > 0), { timeout: 15_000 })
      .toBe(true);
    for (const task of tasks) {
      const [message, ...duplicates] = consumer.ofTask(task.id);
      expect(duplicates).toHaveLength(0);
      expect(message!.topic).toBe(`${config.topicPrefix}tasks.${task.priority}`);
      expect(message!.key).toBe(tenant.id);
      expect(message!.arrivedAtMs).toBeGreaterThanOrEqual(task.runAtMs);
      const envelope = message!.envelope;
      expect(Date.parse(envelope.dispatched_at)).toBeGreaterThanOrEqual(task.runAtMs);
      expect(envelope).toMatchObject({
        v: 1,
        task_id: task.id,
        tenant_id: tenant.id,
        type: `send.${task.priority}`,
        attempt: 0,
        run_at: new Date(task.runAtMs).toISOString(),
        timeout_ms: 30_000,
        idempotency_key: expect.stringMatching(/^k-/),
        payload: { n: expect.any(Number), text: "héllo" },
      });
      expect(envelope.fencing_token).toMatch(/^\d+$/);
      expect(await statusOf(task.id)).toEqual({ status: "ARMED", token: envelope.fencing_token });
    }
  });

  it("never publishes a cancelled task, whether cancelled before or after it was armed", async () => {
    const early = await submit({ type: "cancel.early", delay_ms: 2500 });
    expect(
      (await call(api.baseUrl, "DELETE", `/v1/tasks/${early.id}`, { key: tenant.apiKey })).status,
    ).toBe(200);
    const armed = await submit({ type: "cancel.armed", delay_ms: 2500 });
    // The dispatcher arms what is due within its 1 s lookahead.
    await expect
      .poll(async () => (await statusOf(armed.id)).status, { timeout: 10_000 })
      .toBe("ARMED");
    expect(
      (await call(api.baseUrl, "DELETE", `/v1/tasks/${armed.id}`, { key: tenant.apiKey })).status,
    ).toBe(200);
    const sentinel = await submit({ type: "cancel.sentinel", delay_ms: 3000 });
    await expect.poll(() => consumer.ofTask(sentinel.id).length, { timeout: 15_000 }).toBe(1);
    expect(consumer.ofTask(early.id)).toHaveLength(0);
    expect(consumer.ofTask(armed.id)).toHaveLength(0);
    expect((await statusOf(armed.id)).status).toBe("CANCELLED");
  });

  it("publishes a task later than its tenant's grace to tasks.overdue", async () => {
    const late = await submit({ type: "late", priority: "critical", delay_ms: 600_000 });
    await untilDue(redis, config.redisKeyPrefix, { tenantId: tenant.id, id: late.id }); // before the ZADD below
    const shard = shardOf(tenant.id, late.id);
    // As if every dispatcher had been down for 10 s past its run_at (grace is 5 s).
    const runAtMs = Date.now() - 10_000;
    await withPg(db.url, (c) =>
      c.query(
        "UPDATE tasks SET run_at = timestamptz 'epoch' + $2 * interval '1 millisecond' WHERE id = $1",
        [late.id, runAtMs],
      ),
    );
    await redis.zrem(dueKey(config.redisKeyPrefix, shard), late.id);
    await redis.zadd(dueKey(config.redisKeyPrefix, shard), runAtMs, late.id);
    await expect.poll(() => consumer.ofTask(late.id).length, { timeout: 10_000 }).toBe(1);
    const [message] = consumer.ofTask(late.id);
    expect(message!.topic).toBe(`${config.topicPrefix}tasks.overdue`);
  });
});
