/**
 * Priority isolation: 50,000 bulk envelopes are queued in Kafka ahead of a
 * handful of critical tasks; the critical tasks still start and complete
 * while almost all of the bulk backlog is still waiting — they are not
 * behind it. Separate consumer groups, concurrency and Postgres pools per
 * queue are what this checks. The lateness figure is printed, not asserted
 * (speed targets belong in bench/).
 */
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Config } from "../../src/config/config.js";
import { envelopeJson, topicName } from "../../src/domain/envelope.js";
import { call, type TestTenant } from "./support/api.js";
import { requireKafka, TEST_KAFKA_BROKERS } from "./support/kafka.js";
import { type Pipeline, startPipeline } from "./support/pipeline.js";
import { withPg } from "./support/services.js";

vi.setConfig({ testTimeout: 180_000 });

const BULK = 50_000;
const CRITICAL = 20;

let fixture: Pipeline;
let config: Config;
let tenant: TestTenant;

beforeAll(async () => {
  await requireKafka();
  fixture = await startPipeline("isolation", {
    // The bulk backlog is ARMED for minutes: it must not be re-armed meanwhile.
    dispatchTimeoutMs: 3_600_000,
    workerConcurrencyBulk: 8,
    workerConcurrencyCritical: 8,
  });
  ({ config, tenant } = fixture);
}, 120_000);

afterAll(async () => {
  await fixture?.stop();
});

/** ARMED bulk tasks written straight to Postgres, their envelopes straight to Kafka: a backlog. */
async function queueBulkBacklog(): Promise<void> {
  const armed = await withPg(fixture.db.url, async (c) => {
    const result = await c.query(
      `INSERT INTO tasks (id, tenant_id, type, payload, priority, status, run_at, max_attempts,
                          timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
                          created_at, updated_at, fencing_token, armed_at)
       SELECT gen_random_uuid(), $1, 'sleep', '{"ms":20}', 'bulk', 'ARMED', date_trunc('milliseconds', now()), 3, 30000,
              'exponential', 1000, 60000, now(), now(), nextval('fencing_token_seq'), now()
         FROM generate_series(1, $2)
       RETURNING id, fencing_token::text AS token, (extract(epoch FROM run_at) * 1000)::float8 AS run_at_ms`,
      [tenant.id, BULK],
    );
    return result.rows as Array<{ id: string; token: string; run_at_ms: number }>;
  });
  const kafka = new Kafka({ brokers: TEST_KAFKA_BROKERS, logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  await producer.connect();
  try {
    for (let i = 0; i < armed.length; i += 2000) {
      await producer.send({
        topic: topicName(config.topicPrefix, "bulk"),
        messages: armed.slice(i, i + 2000).map((row) => ({
          key: tenant.id,
          value: envelopeJson(
            {
              id: row.id,
              tenantId: tenant.id,
              type: "sleep",
              payloadJson: '{"ms":20}',
              priority: "bulk",
              runAtMs: Math.round(row.run_at_ms),
              attempt: 0,
              fencingToken: row.token,
              timeoutMs: 30_000,
              idempotencyKey: null,
              workflowId: null,
              graceMs: 0,
            },
            Date.now(),
          ),
        })),
      });
    }
  } finally {
    await producer.disconnect();
  }
}

const countOf = (sql: string) =>
  withPg(fixture.db.url, async (c) => Number((await c.query(sql)).rows[0].n));

/** Submits CRITICAL critical no-op tasks due in 1 s; waits until all completed; their start lateness, sorted. */
async function criticalRound(): Promise<number[]> {
  const answer = await call(fixture.api.baseUrl, "POST", "/v1/tasks/batch", {
    key: tenant.apiKey,
    body: {
      tasks: Array.from({ length: CRITICAL }, () => ({
        type: "noop",
        priority: "critical",
        delay_ms: 1000,
      })),
    },
  });
  expect(answer.status).toBe(201);
  const ids: string[] = answer.body.tasks.map((t: { id: string }) => t.id);
  const done = () =>
    withPg(fixture.db.url, async (c) => {
      const result = await c.query(
        `SELECT (extract(epoch FROM started_at - run_at) * 1000)::float8 AS ms
           FROM tasks WHERE id = ANY($1::uuid[]) AND status = 'COMPLETED' ORDER BY 1`,
        [ids],
      );
      return result.rows.map((r) => r.ms as number);
    });
  await expect
    .poll(async () => (await done()).length, { timeout: 60_000, interval: 100 })
    .toBe(CRITICAL);
  return done();
}

const summary = (ms: number[]) =>
  `median ${ms[Math.floor(ms.length / 2)]!.toFixed(1)} ms, max ${ms[ms.length - 1]!.toFixed(1)} ms`;

describe("priority isolation", () => {
  it("critical tasks start while 50,000 bulk tasks queued before them still wait", async () => {
    const baseline = await criticalRound();
    await queueBulkBacklog();
    await expect
      .poll(
        () =>
          countOf(
            "SELECT count(*) AS n FROM tasks WHERE priority = 'bulk' AND status = 'COMPLETED'",
          ),
        { timeout: 60_000, interval: 200 },
      )
      .toBeGreaterThan(0);
    const behindBacklog = await criticalRound();
    const bulkWaiting = await countOf(
      "SELECT count(*) AS n FROM tasks WHERE priority = 'bulk' AND status = 'ARMED'",
    );
    // Every critical task finished while (nearly) the whole backlog ahead of it still waits.
    expect(bulkWaiting).toBeGreaterThan(BULK * 0.8);
    expect(Math.min(...baseline, ...behindBacklog)).toBeGreaterThanOrEqual(0); // never early
    console.log(
      `isolation: critical start lateness without backlog ${summary(baseline)}; behind ${BULK} queued bulk ${summary(behindBacklog)}; bulk still waiting ${bulkWaiting}`,
    );
  });
});
