#!/usr/bin/env node
// Readiness and smoke check for a Kafka broker, with kafkajs (the client
// Chronofence uses).
//
//   node scripts/kafka/smoke.mjs ready [--brokers 127.0.0.1:9092] [--timeout SECONDS]
//       exit 0 once the broker returns cluster metadata and its topic list,
//       1 if it has not within the timeout (0 = one try).
//   node scripts/kafka/smoke.mjs smoke [--brokers 127.0.0.1:9092] [--verbose]
//       create a topic with the admin client, produce messages, consume them
//       back in a consumer group, delete the topic; exit 0 when all came back.
//
// The brokers default to $KAFKA_BROKERS, else 127.0.0.1:9092.
import { Kafka, logLevel, Partitioners } from "kafkajs";

const args = process.argv.slice(2);
const mode = args[0] ?? "ready";
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const brokers = opt("brokers", process.env.KAFKA_BROKERS ?? "127.0.0.1:9092").split(",");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function ready(timeoutSec) {
  const kafka = new Kafka({
    clientId: "chronofence-kafka-ready",
    brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 1000,
    requestTimeout: 3000,
    retry: { retries: 0 },
  });
  const end = Date.now() + timeoutSec * 1000;
  let last;
  for (;;) {
    const admin = kafka.admin();
    try {
      await admin.connect();
      const cluster = await admin.describeCluster();
      await admin.listTopics();
      await admin.disconnect();
      if (cluster.brokers.length > 0 && cluster.controller !== null) return true;
      last = new Error("no controller yet");
    } catch (err) {
      last = err;
      await admin.disconnect().catch(() => {});
    }
    if (Date.now() >= end) {
      if (process.env.KAFKA_READY_VERBOSE) console.error(`not ready: ${last?.message ?? last}`);
      return false;
    }
    await sleep(500);
  }
}

async function smoke() {
  const t0 = Date.now();
  const kafka = new Kafka({
    clientId: "chronofence-kafka-smoke",
    brokers,
    // kafkajs logs retried, transient errors (such as "The group coordinator
    // is not available" while __consumer_offsets is being created) at ERROR;
    // a real failure is reported below anyway. --verbose shows them.
    logLevel: args.includes("--verbose") ? logLevel.INFO : logLevel.NOTHING,
    retry: { retries: 5 },
  });
  const topic = `chronofence-smoke-${process.pid}-${Date.now()}`;
  const admin = kafka.admin();
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  const consumer = kafka.consumer({ groupId: `${topic}-group` });
  const sent = Array.from({ length: 5 }, (_, i) => `message-${i}`);
  const got = [];
  let failure;
  try {
    await admin.connect();
    const { brokers: bs, clusterId } = await admin.describeCluster();
    console.log(`cluster ${clusterId}, brokers ${bs.map((b) => `${b.host}:${b.port}`).join(",")}`);
    const created = await admin.createTopics({
      topics: [{ topic, numPartitions: 1, replicationFactor: 1 }],
      waitForLeaders: true,
    });
    if (!created) throw new Error(`topic ${topic} was not created`);
    const meta = await admin.fetchTopicMetadata({ topics: [topic] });
    console.log(`created ${topic} (${meta.topics[0].partitions.length} partition)`);

    await producer.connect();
    const res = await producer.send({
      topic,
      acks: -1,
      messages: sent.map((value, i) => ({ key: `k${i}`, value })),
    });
    console.log(`produced ${sent.length} messages, base offset ${res[0].baseOffset}`);

    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    const done = new Promise((resolve) => {
      consumer.run({
        eachMessage: async ({ message }) => {
          got.push(message.value.toString());
          if (got.length >= sent.length) resolve();
        },
      });
    });
    const timeout = sleep(30000).then(() => {
      throw new Error(`timed out: consumed ${got.length}/${sent.length}`);
    });
    await Promise.race([done, timeout]);
    if (JSON.stringify(got) !== JSON.stringify(sent)) {
      throw new Error(`consumed ${JSON.stringify(got)}, expected ${JSON.stringify(sent)}`);
    }
    console.log(`consumed ${got.length} messages in group ${topic}-group`);
    // Disconnecting commits the consumed offsets; read them back.
    await consumer.disconnect();
    const [committed] = await admin.fetchOffsets({ groupId: `${topic}-group`, topics: [topic] });
    const [end] = await admin.fetchTopicOffsets(topic);
    const offset = committed.partitions[0].offset;
    if (offset !== String(sent.length) || end.high !== String(sent.length)) {
      throw new Error(
        `committed offset ${offset}, high watermark ${end.high}, expected ${sent.length}`,
      );
    }
    console.log(`committed offset ${offset} = high watermark ${end.high}`);
  } catch (err) {
    failure = err;
  } finally {
    await consumer.disconnect().catch(() => {});
    await producer.disconnect().catch(() => {});
    await admin.deleteTopics({ topics: [topic] }).catch(() => {});
    await admin.deleteGroups([`${topic}-group`]).catch(() => {});
    await admin.disconnect().catch(() => {});
  }
  if (failure) {
    console.error(`kafka smoke FAILED: ${failure.stack ?? failure}`);
    return false;
  }
  console.log(`kafka smoke OK against ${brokers.join(",")} in ${Date.now() - t0} ms`);
  return true;
}

let ok;
if (mode === "ready") ok = await ready(Number(opt("timeout", "0")));
else if (mode === "smoke") ok = await smoke();
else {
  console.error(
    "usage: smoke.mjs ready|smoke [--brokers host:port,...] [--timeout SECONDS] [--verbose]",
  );
  process.exit(2);
}
process.exit(ok ? 0 : 1);
