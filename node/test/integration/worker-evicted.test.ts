/**
 * A worker whose consumer the group coordinator evicted (paused past its
 * session timeout: SIGSTOP, a long GC, a starved CPU) must rejoin its group
 * when it resumes, not go on committing under a member id the coordinator
 * has forgotten while it reports itself up (docs/evidence.md, F2: seen in the
 * chaos runs, a group served by one member fewer for good).
 */
import { Kafka, logLevel } from "kafkajs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { workerGroupOf } from "../../src/adapters/kafka/kafka-task-consumer.js";
import { requireKafka, TEST_KAFKA_BROKERS } from "./support/kafka.js";
import { type Pipeline, startPipeline, workerChild } from "./support/pipeline.js";
import { killRolesChildren } from "./support/roles-child.js";

/** workerChild's CF_WORKER_SESSION_TIMEOUT_MS. */
const SESSION_TIMEOUT_MS = 6000;

let fixture: Pipeline;

beforeAll(async () => {
  await requireKafka();
  fixture = await startPipeline("worker-evicted", {}, { worker: false });
});

afterEach(() => killRolesChildren());

afterAll(async () => {
  killRolesChildren();
  await fixture?.stop();
});

/** The client ids of the standard queue's group members (each worker's id is in its client id). */
async function membersOfStandard(): Promise<string[]> {
  const admin = new Kafka({ brokers: TEST_KAFKA_BROKERS, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const group = workerGroupOf(fixture.config.topicPrefix, "standard");
    const { groups } = await admin.describeGroups([group]);
    return (groups[0]?.members ?? []).map((m) => m.clientId).sort();
  } finally {
    await admin.disconnect();
  }
}

const holding = (nodeIds: string[]) => (clientIds: string[]) =>
  nodeIds.every((id) => clientIds.some((c) => c.includes(id))) &&
  clientIds.length === nodeIds.length;

describe("a worker evicted from its consumer group", () => {
  it("rejoins when it resumes, and the group has both members again", async () => {
    const evicted = await workerChild(fixture, "evicted", 5000);
    await workerChild(fixture, "peer", 5000);
    await expect
      .poll(membersOfStandard, { timeout: 60_000, interval: 500 })
      .toSatisfy(holding(["evicted", "peer"]));

    evicted.process.kill("SIGSTOP");
    // Evicted once the session timeout passes without its heartbeat (and the group rebalanced).
    await expect
      .poll(membersOfStandard, { timeout: 6 * SESSION_TIMEOUT_MS, interval: 500 })
      .toSatisfy(holding(["peer"]));
    // Its commit interval and heartbeats come due together when it resumes.
    await new Promise((resolve) => setTimeout(resolve, SESSION_TIMEOUT_MS));
    evicted.process.kill("SIGCONT");

    await expect
      .poll(membersOfStandard, { timeout: 10 * SESSION_TIMEOUT_MS, interval: 500 })
      .toSatisfy(holding(["evicted", "peer"]));
    expect(await evicted.metric("cf_worker_consumer_up", 'queue="standard"')).toBe(1);
  }, 240_000);
});
