/**
 * A queue consumer cut off from its broker by a network partition (a black
 * hole: bytes stop, connections stay open; then the links reset) for longer
 * than its session timeout must be back in its group after the heal, and
 * consume again — not stay out of it while it reports itself up
 * (docs/evidence.md, F2: seen in chaos runs that partitioned nodes from
 * Kafka). Two KafkaTaskConsumers of one group on a broker of the test's own
 * (bench/chaos/services.ts: one listener advertised at the proxy, so every
 * connection of the cut consumer, metadata answers included, goes through
 * it), the other consumer on the broker's own listener.
 *
 * The last case is F2's cause, made on demand: the proxy loses one
 * heartbeat (the group evicts the member) and resets the connection of the
 * rejoin that follows; kafkajs then fetches on with no member id and never
 * rejoins (node/src/adapters/kafka/membership-watch.ts). It failed before
 * that watch: the consumer stayed out of its group while reporting itself up.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { undoAll } from "../../../bench/chaos/cleanup.js";
import { KafkaApi, type RequestRule } from "../../../bench/chaos/kafka-requests.js";
import { type PartitionProxy, partitionProxy } from "../../../bench/chaos/proxy.js";
import { type OwnKafka, startOwnKafka } from "../../../bench/chaos/services.js";
import { freePort } from "../../../bench/free-port.js";
import { KafkaTaskConsumer, workerGroupOf } from "../../src/adapters/kafka/kafka-task-consumer.js";
import { topicName } from "../../src/domain/envelope.js";

const SESSION_TIMEOUT_MS = 6000;
const PARTITIONS = 4;

let dir: string;
let kafka: OwnKafka;
let proxy: PartitionProxy;
const consumers: KafkaTaskConsumer[] = [];
let PREFIX = "";
let received = { cut: 0, direct: 0 };
let up = { cut: false, direct: false };

function consumer(
  name: "cut" | "direct",
  brokers: string[],
  maxInFlight = 100,
  requestTimeoutMs?: number,
): KafkaTaskConsumer {
  const c = new KafkaTaskConsumer({
    brokers,
    clientId: `chronofence-${name}-standard`,
    topicPrefix: PREFIX,
    kind: "standard",
    maxInFlight,
    maxRetained: 1000,
    commitIntervalMs: 200,
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
    requestTimeoutMs,
    onError: () => undefined,
    onRunning: (running) => {
      up[name] = running;
    },
  });
  consumers.push(c);
  return c;
}

/** Counts each message; the cut consumer's wait for `gate` first, when there is one. */
const handler = (name: "cut" | "direct", gate?: Promise<void>) => async () => {
  if (gate && name === "cut") await gate;
  received[name]++;
  return true;
};

/** A fresh group and topic for one scenario (the broker is shared by the file's tests). */
async function freshQueue(name: string): Promise<void> {
  PREFIX = `partition-${name}-${Date.now()}.`;
  received = { cut: 0, direct: 0 };
  up = { cut: false, direct: false };
  await Promise.allSettled(consumers.splice(0).map((c) => c.stop()));
  proxy.kafkaRule(null);
  const admin = new Kafka({ brokers: [kafka.brokers], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  await admin.createTopics({
    topics: [{ topic: topicName(PREFIX, "standard"), numPartitions: PARTITIONS }],
  });
  await admin.disconnect();
}

/** Cuts the proxy until the group has evicted the cut consumer, and for two session timeouts more. */
async function partitionPastEviction(): Promise<void> {
  proxy.partition();
  await expect
    .poll(members, { timeout: 6 * SESSION_TIMEOUT_MS, interval: 500 })
    .toEqual(["chronofence-direct-standard"]);
  await new Promise((resolve) => setTimeout(resolve, 2 * SESSION_TIMEOUT_MS));
  proxy.heal();
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "cf-kafka-partition-"));
  const listenPort = await freePort();
  proxy = await partitionProxy({ host: "127.0.0.1", port: listenPort }, { kafkaRequests: true });
  kafka = await startOwnKafka(dir, [{ listenPort, advertisedPort: proxy.port }]);
}, 300_000);

afterAll(async () => {
  await Promise.allSettled(consumers.map((c) => c.stop()));
  await proxy?.close();
  await undoAll(); // the broker (startOwnKafka registered its stop)
  if (dir) await rm(dir, { recursive: true, force: true });
}, 120_000);

async function members(): Promise<string[]> {
  const admin = new Kafka({ brokers: [kafka.brokers], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const { groups } = await admin.describeGroups([workerGroupOf(PREFIX, "standard")]);
    return (groups[0]?.members ?? []).map((m) => m.clientId).sort();
  } finally {
    await admin.disconnect();
  }
}

async function produce(count: number): Promise<void> {
  const producer = new Kafka({ brokers: [kafka.brokers], logLevel: logLevel.NOTHING }).producer();
  await producer.connect();
  await producer.send({
    topic: topicName(PREFIX, "standard"),
    messages: Array.from({ length: count }, (_, i) => ({ key: `k${i}`, value: `m${i}` })),
  });
  await producer.disconnect();
}

const BOTH = ["chronofence-cut-standard", "chronofence-direct-standard"];

/**
 * Both members in the group again, the cut one says it is up, and its
 * partitions are its own: new messages reach it. Produced in rounds, as the
 * group may still be settling when both are listed (the other member then
 * takes a round before the assignment moves).
 */
async function expectBackAndConsuming(): Promise<void> {
  await expect.poll(members, { timeout: 90_000, interval: 1000 }).toEqual(BOTH);
  await expect.poll(() => up.cut, { timeout: 30_000 }).toBe(true);
  const before = received.cut;
  await expect
    .poll(
      async () => {
        await produce(40);
        return received.cut > before;
      },
      { timeout: 60_000, interval: 1000 },
    )
    .toBe(true);
}

/** Both consumers in their group, each with messages of its own. */
async function bothConsuming(cut: KafkaTaskConsumer): Promise<void> {
  await cut.start(handler("cut"));
  await consumer("direct", [kafka.brokers]).start(handler("direct"));
  await expect.poll(members, { timeout: 60_000, interval: 500 }).toEqual(BOTH);
  await produce(200);
  await expect.poll(() => received.cut > 0 && received.direct > 0, { timeout: 30_000 }).toBe(true);
}

describe("a queue consumer partitioned from its broker past its session timeout", () => {
  it("is back in its group after the heal, says so, and consumes again", async () => {
    await freshQueue("idle");
    await bothConsuming(consumer("cut", [`127.0.0.1:${proxy.port}`]));

    await partitionPastEviction();

    await expectBackAndConsuming();
  }, 300_000);

  it("rejoins too when the partition caught it with a batch waiting for room, its tasks finishing after the heal", async () => {
    await freshQueue("busy");
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    // Two in flight at most: its tasks hang until the gate opens, so its batch waits for room.
    await consumer("cut", [`127.0.0.1:${proxy.port}`], 2).start(handler("cut", gate));
    await consumer("direct", [kafka.brokers]).start(handler("direct"));
    await expect.poll(members, { timeout: 60_000, interval: 500 }).toEqual(BOTH);
    await produce(200);
    await expect.poll(() => received.direct > 0, { timeout: 30_000 }).toBe(true);

    await partitionPastEviction();
    open();

    await expectBackAndConsuming();
  }, 300_000);

  it("rejoins when its rejoin after an eviction failed (kafkajs then fetches on with no member id, heartbeats never again)", async () => {
    await freshQueue("rejoin-failed");
    // The lost heartbeat times out after the group has evicted its member (one session
    // timeout after the last heartbeat that arrived), and before two session timeouts.
    await bothConsuming(
      consumer("cut", [`127.0.0.1:${proxy.port}`], 100, SESSION_TIMEOUT_MS * 1.25),
    );

    // Idle now (no commit renews its session either). Its next heartbeat is lost, so the
    // group evicts it; the one after answers UNKNOWN_MEMBER_ID, kafkajs forgets its member
    // id and rejoins, and that JoinGroup's connection is reset.
    const resets = proxy.resets;
    proxy.kafkaRule(loseHeartbeatThenFailRejoin());
    await expect.poll(() => proxy.resets, { timeout: 60_000, interval: 200 }).toBe(resets + 1);

    await expectBackAndConsuming();
  }, 300_000);
});

/** Loses the first heartbeat, then resets the connection of the first JoinGroup after it. */
function loseHeartbeatThenFailRejoin(): RequestRule {
  let heartbeatLost = false;
  let rejoinFailed = false;
  return (apiKey) => {
    if (apiKey === KafkaApi.Heartbeat && !heartbeatLost) {
      heartbeatLost = true;
      return "drop";
    }
    if (apiKey === KafkaApi.JoinGroup && heartbeatLost && !rejoinFailed) {
      rejoinFailed = true;
      return "reset";
    }
    return "forward";
  };
}
