/**
 * Direct mode end to end (CF_DIRECT_QUEUES, adapters/memory/direct-transport.ts):
 * `chronofence run --roles dispatcher,preloader,reconciler,worker` as a child
 * process on the real Postgres and Redis, the API in the test process.
 *  - every queue direct: tasks run with no broker at all (KAFKA_BROKERS
 *    points at a port nobody listens on), each started once, by this node;
 *  - with the API in the same process (a single node's every role);
 *  - one queue direct: its envelopes never reach Kafka, the others' do;
 *  - kill -9 with an envelope held in memory (armed, waiting for its
 *    tenant's only slot): nothing is lost. The reconciler re-arms it under a
 *    new token once nobody started it within the dispatch timeout, and the
 *    next node runs it once.
 */
import { Kafka, logLevel } from "kafkajs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../bench/free-port.js";
import { TOPICS, topicName } from "../../src/domain/envelope.js";
import { type ApiFixture, call, startApiFixture, submitTask } from "./support/api.js";
import { newTopicPrefix, requireKafka, TEST_KAFKA_BROKERS } from "./support/kafka.js";
import { PIPELINE_TIMINGS } from "./support/pipeline.js";
import { fixtureEnv, killRolesChildren, startRolesChild } from "./support/roles-child.js";
import { withPg } from "./support/services.js";

const DISPATCH_TIMEOUT_MS = 5000;
const ALL_QUEUES = TOPICS.join(",");
const NO_BROKER = "127.0.0.1:9";
const DIRECT_ROLES = "dispatcher,preloader,reconciler,worker";

let fixture: ApiFixture;

beforeAll(async () => {
  await requireKafka();
  fixture = await startApiFixture({ topicPrefix: newTopicPrefix("direct"), ...PIPELINE_TIMINGS });
});

afterEach(() => killRolesChildren());

afterAll(async () => {
  killRolesChildren();
  await fixture?.stop();
});

const node = (nodeId: string, env: Record<string, string>, roles = DIRECT_ROLES) =>
  startRolesChild(roles, {
    ...fixtureEnv(fixture, nodeId),
    CF_METRICS_PORT: "0",
    CF_WORKER_METRICS_PORT: "0",
    CF_LEASE_TTL_MS: "3000",
    CF_LEASE_HEARTBEAT_MS: "300",
    CF_LEASE_SAFETY_MARGIN_MS: "1000",
    CF_CLAIM_INTERVAL_MS: "50",
    CF_RECONCILE_INTERVAL_MS: "300",
    CF_DISPATCH_TIMEOUT_MS: String(DISPATCH_TIMEOUT_MS),
    CF_WORKER_LEASE_MS: "1500",
    CF_WORKER_HEARTBEAT_MS: "300",
    ...env,
  });

const submit = (body: Record<string, unknown>) =>
  submitTask(fixture.api.baseUrl, fixture.tenant.apiKey, body);

interface Row {
  id: string;
  status: string;
  attempt: number;
  lease_owner: string | null;
  token: string;
  early: boolean;
}

const rowsOf = (ids: string[]) =>
  withPg(
    fixture.db.url,
    async (c) =>
      (
        await c.query(
          `SELECT id, status, attempt, lease_owner, fencing_token::text AS token,
                  started_at < run_at AS early
             FROM tasks WHERE id = ANY($1::uuid[]) ORDER BY id`,
          [ids],
        )
      ).rows as Row[],
  );

const allCompleted = (ids: string[]) =>
  expect
    .poll(async () => (await rowsOf(ids)).every((r) => r.status === "COMPLETED"), {
      timeout: 60_000,
      interval: 100,
    })
    .toBe(true);

const runAt = (inMs: number) => new Date(Date.now() + inMs).toISOString();

/** Messages in each of the fixture's topics that exist (those the node created). */
async function messagesPerTopic(): Promise<Record<string, number>> {
  const admin = new Kafka({ brokers: TEST_KAFKA_BROKERS, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const counts: Record<string, number> = {};
    for (const kind of TOPICS) {
      const offsets = await admin.fetchTopicOffsets(topicName(fixture.config.topicPrefix, kind));
      counts[kind] = offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
    }
    return counts;
  } finally {
    await admin.disconnect();
  }
}

describe("direct mode", () => {
  it("runs every queue in the node with no broker: each task once, never early, by this node", async () => {
    const a = await node("direct-all", { CF_DIRECT_QUEUES: ALL_QUEUES, KAFKA_BROKERS: NO_BROKER });
    const priorities = ["critical", "standard", "bulk"];
    const ids = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        submit({ type: "noop", run_at: runAt(500 + i * 20), priority: priorities[i % 3] }),
      ),
    );
    await allCompleted(ids);
    for (const row of await rowsOf(ids)) {
      expect(row).toMatchObject({ attempt: 1, lease_owner: a.nodeId, early: false });
    }
  }, 120_000);

  it("runs with the API in the same process: tasks submitted to it run there, once, never early", async () => {
    const port = await freePort();
    const env = { CF_DIRECT_QUEUES: ALL_QUEUES, KAFKA_BROKERS: NO_BROKER, PORT: String(port) };
    const a = await node("direct-api", env, `api,${DIRECT_ROLES}`);
    // The API starts after the other roles' `ready` lines.
    const baseUrl = `http://127.0.0.1:${port}`;
    await expect
      .poll(
        () =>
          call(baseUrl, "GET", "/healthz").then(
            (r) => r.status,
            () => 0,
          ),
        {
          timeout: 30_000,
        },
      )
      .toBe(200);
    const ids = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        submitTask(baseUrl, fixture.tenant.apiKey, { type: "noop", run_at: runAt(300 + i * 20) }),
      ),
    );
    await allCompleted(ids);
    for (const row of await rowsOf(ids)) {
      expect(row).toMatchObject({ attempt: 1, lease_owner: a.nodeId, early: false });
    }
  }, 120_000);

  it("keeps its direct queue out of Kafka and publishes the others there", async () => {
    await node("direct-standard", { CF_DIRECT_QUEUES: "standard" });
    const ids = [
      await submit({ type: "noop", run_at: runAt(300), priority: "standard" }),
      await submit({ type: "noop", run_at: runAt(300), priority: "standard" }),
      await submit({ type: "noop", run_at: runAt(300), priority: "critical" }),
    ];
    await allCompleted(ids);
    expect(await messagesPerTopic()).toMatchObject({ standard: 0, critical: 1 });
  }, 120_000);

  it("loses nothing when killed with an envelope in memory: the task is re-armed and runs once", async () => {
    const env = {
      CF_DIRECT_QUEUES: ALL_QUEUES,
      KAFKA_BROKERS: NO_BROKER,
      CF_WORKER_TENANT_CONCURRENCY: "1",
    };
    const a = await node("direct-killed", env);
    const long = await submit({ type: "sleep", payload: { ms: 3000 }, max_attempts: 3 });
    await expect
      .poll(async () => (await rowsOf([long]))[0]?.status, { timeout: 30_000, interval: 50 })
      .toBe("RUNNING");
    // Behind it: armed and handed to the worker, which holds it for the tenant's only slot.
    const held = await submit({ type: "noop" });
    await expect
      .poll(async () => (await rowsOf([held]))[0]?.status, { timeout: 30_000, interval: 50 })
      .toBe("ARMED");
    const heldToken = (await rowsOf([held]))[0]!.token;

    a.process.kill("SIGKILL");
    await a.exited;
    await node("direct-after", env);

    await allCompleted([long, held]);
    const [after] = await rowsOf([held]);
    expect(after).toMatchObject({ attempt: 1, lease_owner: "direct-after", early: false });
    expect(BigInt(after!.token)).toBeGreaterThan(BigInt(heldToken));
  }, 120_000);
});
