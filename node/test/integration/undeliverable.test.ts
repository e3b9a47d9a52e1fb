/**
 * Envelopes the broker can never accept, through the real dispatcher, Kafka
 * and Postgres: a task stored with a payload over the broker's limit (as data
 * written before the stored-size check, or by another path, could be) is DEAD
 * with the reason and a dead letter — whether the dispatcher's own limit
 * (CF_KAFKA_MAX_MESSAGE_BYTES) catches it or the broker refuses it
 * (MESSAGE_TOO_LARGE) — and the tasks due with it in the same produce request
 * are published. No retry loop: it is buried once.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "./support/api.js";
import { requireKafka, TestConsumer } from "./support/kafka.js";
import { type Pipeline, startPipeline } from "./support/pipeline.js";
import { withPg } from "./support/services.js";

/** Between the broker's 1 MiB limit and what the test's envelopes need. */
const OUR_LIMIT_BYTES = 1_500_000;
let fixture: Pipeline;
let consumer: TestConsumer;

beforeAll(async () => {
  await requireKafka();
  fixture = await startPipeline(
    "undeliverable",
    { kafkaMaxMessageBytes: OUR_LIMIT_BYTES },
    { worker: false },
  );
  consumer = new TestConsumer(fixture.config.topicPrefix);
  await consumer.start();
}, 120_000);

afterAll(async () => {
  await consumer?.stop();
  await fixture?.stop();
});

/** A task stored directly, its payload a string of `chars` characters, due at `runAtMs`. */
async function storeHuge(chars: number, runAtMs: number): Promise<string> {
  const id = randomUUID();
  await withPg(fixture.db.url, (c) =>
    c.query(
      `INSERT INTO tasks (id, tenant_id, type, payload, priority, status, run_at, max_attempts,
                          timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
                          created_at, updated_at)
       VALUES ($1, $2, 'huge', to_jsonb(repeat('x', $3)), 'standard', 'SCHEDULED',
               to_timestamp($4 / 1000.0), 3, 1000, 'fixed', 1, 1, now(), now())`,
      [id, fixture.tenant.id, chars, runAtMs],
    ),
  );
  return id;
}

const rowOf = (id: string) =>
  withPg(fixture.db.url, async (c) => {
    const task = await c.query("SELECT status, last_error FROM tasks WHERE id = $1", [id]);
    const letters = await c.query("SELECT reason, error FROM dead_letters WHERE task_id = $1", [
      id,
    ]);
    return { ...task.rows[0], letters: letters.rows };
  });

describe("undeliverable envelopes", () => {
  it("a task over the broker's or our limit is DEAD with the reason; the tasks due with it are published", async () => {
    const runAtMs = Date.now() + 4000;
    const refusedByBroker = await storeHuge(1_200_000, runAtMs);
    const overOurLimit = await storeHuge(3_000_000, runAtMs);
    const neighbours: string[] = [];
    for (let i = 0; i < 5; i++) {
      const answer = await call(fixture.api.baseUrl, "POST", "/v1/tasks", {
        key: fixture.tenant.apiKey,
        body: { type: "neighbour", run_at: new Date(runAtMs).toISOString() },
      });
      expect(answer.status).toBe(201);
      neighbours.push(answer.body.id);
    }
    for (const id of [refusedByBroker, overOurLimit]) {
      await expect
        .poll(async () => (await rowOf(id)).status, { timeout: 60_000, interval: 200 })
        .toBe("DEAD");
      const row = await rowOf(id);
      expect(row.last_error).toMatchObject({ code: "message_too_large", retryable: false });
      expect(row.letters).toEqual([
        { reason: "undeliverable", error: expect.objectContaining({ code: "message_too_large" }) },
      ]);
    }
    await expect
      .poll(() => neighbours.filter((id) => consumer.ofTask(id).length > 0).length, {
        timeout: 30_000,
      })
      .toBe(neighbours.length);
    expect(consumer.ofTask(refusedByBroker)).toEqual([]);
    expect(consumer.ofTask(overOurLimit)).toEqual([]);
    const metrics = await fetch(`http://127.0.0.1:${fixture.roles.metricsPort}/metrics`);
    expect(await metrics.text()).toMatch(/^cf_dispatch_undeliverable_total 2$/m);
  }, 120_000);
});
