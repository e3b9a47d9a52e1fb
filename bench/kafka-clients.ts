/**
 * kafkajs against @platformatic/kafka, side by side on the same broker: a
 * publisher (the dispatcher's, behind the Publisher port) offering envelopes
 * open-loop at each rate, every millisecond's worth in one publish as the
 * dispatcher does, and a consumer group reading them as the workers do. Each
 * side is its own process, so its CPU is its own; the broker's CPU is read too.
 *
 *   node dist/bench/kafka-clients.js [--rates 1000,5000,20000] [--pairs P/C,...] [--seconds 10] [--runs 3] [--json]
 *
 * Pairs name the publisher's client and the consumer's (--pairs
 * kafkajs/kafkajs,platformatic/kafkajs,...). Reported per pair and rate
 * (medians over the runs, which alternate the pairs' order): publish acknowledgement and arrival latency (sent to
 * consumed), messages per produce request, and CPU µs per message of the
 * publisher, the consumer and the broker; messages whose publish failed and
 * messages consumed twice.
 */
import "../node/src/adapters/kafka/kafkajs-idle-timers.js"; // before kafkajs is used: its idle timers
import { type ChildProcess, spawn } from "node:child_process";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { Consumer as PltConsumer, stringDeserializers } from "@platformatic/kafka";
import { Kafka, logLevel } from "kafkajs";
import { type KafkaOptions, KafkaPublisher } from "../node/src/adapters/kafka/kafka-publisher.js";
import { topicName } from "../node/src/domain/envelope.js";
import type { Publisher } from "../node/src/ports/publisher.js";
import { benchArgs } from "./args.js";
import { PlatformaticPublisher } from "./platformatic-publisher.js";
import { median, percentile } from "./stats.js";
import { coresBetween, cpuTicksOf, round } from "./support.js";

type Client = "kafkajs" | "platformatic";
/** Publisher/consumer clients: what we run, the publisher alone switched, both switched. */
const DEFAULT_PAIRS = "kafkajs/kafkajs,platformatic/kafkajs,platformatic/platformatic";
const BROKERS = (process.env.KAFKA_BROKERS ?? "127.0.0.1:9092").split(",");
const PARTITIONS = 16;
/** A realistic envelope's size (domain/envelope.ts: ids, token, times, a small payload). */
const PAD = "x".repeat(300);

const now = (): number => performance.timeOrigin + performance.now();

// ---- the publisher process -------------------------------------------------

async function produce(client: Client, prefix: string, rate: number, seconds: number) {
  const options: KafkaOptions = {
    brokers: BROKERS,
    clientId: `bench-${client}`,
    topicPrefix: prefix,
    partitions: PARTITIONS,
    replicationFactor: 1,
    onError: () => undefined,
  };
  const publisher: Publisher =
    client === "kafkajs" ? new KafkaPublisher(options) : new PlatformaticPublisher(options);
  await publisher.publish([{ kind: "standard", key: "warm-up", value: "{}" }]);
  const total = rate * seconds;
  const ackMs: number[] = [];
  let sent = 0;
  let requests = 0;
  let inFlight = 0;
  let failed = 0;
  const start = now();
  const cpuBefore = process.cpuUsage();
  await new Promise<void>((done) => {
    const tick = () => {
      const due = Math.min(total, Math.floor(((now() - start) * rate) / 1000));
      // At most 32 requests in flight, as the dispatcher's outbox: the rest waits for the next tick.
      if (due > sent && inFlight < 32) {
        const batch = [];
        for (; sent < due && batch.length < 1000; sent++) {
          const value = `{"task_id":"${sent}","sent_at":${now()},"pad":"${PAD}"}`;
          batch.push({ kind: "standard" as const, key: `tenant-${sent % 8}`, value });
        }
        const at = now();
        inFlight++;
        requests++;
        publisher.publish(batch).then(
          () => {
            ackMs.push(now() - at);
            inFlight--;
          },
          () => {
            failed += batch.length;
            inFlight--;
          },
        );
      }
      if (sent < total || inFlight > 0) setTimeout(tick, 1);
      else done();
    };
    tick();
  });
  const cpu = process.cpuUsage(cpuBefore);
  await publisher.close();
  ackMs.sort((a, b) => a - b);
  process.stdout.write(
    `${JSON.stringify({ sent, failed, requests, ack_p50_ms: percentile(ackMs, 50), ack_p99_ms: percentile(ackMs, 99), cpu_us: cpu.user + cpu.system })}\n`,
  );
}

// ---- the consumer process --------------------------------------------------

/** Calls `onValue` with each message's value; resolves once the group assigned it the topic. */
async function consume(
  client: Client,
  topic: string,
  onValue: (value: string) => void,
): Promise<() => Promise<void>> {
  const groupId = `${topic}-group`;
  if (client === "kafkajs") {
    const kafka = new Kafka({
      clientId: "bench-consumer",
      brokers: BROKERS,
      logLevel: logLevel.NOTHING,
    });
    // The worker adapter's settings (kafka-task-consumer.ts).
    const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const joined = new Promise<void>((r) => consumer.on(consumer.events.GROUP_JOIN, () => r()));
    await consumer.run({
      autoCommitInterval: 1000,
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) onValue(m.value!.toString());
      },
    });
    await joined;
    return () => consumer.disconnect();
  }
  const consumer = new PltConsumer({
    groupId,
    clientId: "bench-consumer",
    bootstrapBrokers: BROKERS,
    deserializers: stringDeserializers,
    maxWaitTime: 100,
    autocommit: 1000,
  });
  const stream = await consumer.consume({ topics: [topic], mode: "earliest" });
  stream.on("data", (m) => onValue(m.value));
  return async () => {
    await stream.close();
    await consumer.close();
  };
}

async function consumeRole(client: Client, topic: string, expected: number) {
  const lateMs: number[] = [];
  const seen = new Set<string>();
  let duplicates = 0;
  let done: () => void = () => undefined;
  const all = new Promise<void>((r) => {
    done = r;
  });
  const close = await consume(client, topic, (value) => {
    const envelope = JSON.parse(value) as { task_id?: string; sent_at?: number };
    if (envelope.task_id === undefined || envelope.sent_at === undefined) return; // the warm-up
    if (seen.has(envelope.task_id)) {
      duplicates++;
      return;
    }
    seen.add(envelope.task_id);
    lateMs.push(now() - envelope.sent_at);
    if (seen.size === expected) done();
  });
  process.stdout.write("ready\n");
  const cpuBefore = process.cpuUsage();
  await all;
  const cpu = process.cpuUsage(cpuBefore);
  await close();
  lateMs.sort((a, b) => a - b);
  process.stdout.write(
    `${JSON.stringify({ duplicates, arrival_p50_ms: percentile(lateMs, 50), arrival_p99_ms: percentile(lateMs, 99), cpu_us: cpu.user + cpu.system })}\n`,
  );
}

// ---- the orchestrator ------------------------------------------------------

function spawnRole(args: string[]): { child: ChildProcess; lines: AsyncIterator<string> } {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  async function* lines() {
    let buffered = "";
    for await (const chunk of child.stdout!) {
      buffered += chunk.toString();
      for (let i = buffered.indexOf("\n"); i >= 0; i = buffered.indexOf("\n")) {
        yield buffered.slice(0, i);
        buffered = buffered.slice(i + 1);
      }
    }
  }
  return { child, lines: lines() };
}

async function nextLine(lines: AsyncIterator<string>, what: string): Promise<string> {
  const next = await lines.next();
  if (next.done) throw new Error(`${what} exited without answering`);
  return next.value;
}

interface Sample {
  pair: string;
  rate: number;
  ack_p50_ms: number;
  ack_p99_ms: number;
  arrival_p50_ms: number;
  arrival_p99_ms: number;
  messages_per_request: number;
  cpu_us_per_message: { publisher: number; consumer: number; broker: number; total: number };
  failed: number;
  /** Messages consumed more than once (a client's retry writing again what was written). */
  duplicates: number;
}

async function measure(pair: string, rate: number, seconds: number, run: number): Promise<Sample> {
  const [publisherClient, consumerClient] = pair.split("/") as [Client, Client];
  const prefix = `bench-kc-${process.pid}-${run}-${rate}-${publisherClient}-${consumerClient}.`;
  const topic = topicName(prefix, "standard");
  const admin = new Kafka({
    clientId: "bench-admin",
    brokers: BROKERS,
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic, numPartitions: PARTITIONS }],
  });
  try {
    const consumer = spawnRole([
      "--role",
      "consume",
      "--client",
      consumerClient,
      "--topic",
      topic,
      "--expected",
      String(rate * seconds),
    ]);
    if ((await nextLine(consumer.lines, "consumer")) !== "ready")
      throw new Error("consumer not ready");
    const producer = spawnRole([
      "--role",
      "produce",
      "--client",
      publisherClient,
      "--prefix",
      prefix,
      "--rate",
      String(rate),
      "--seconds",
      String(seconds),
    ]);
    const before = await cpuTicksOf({});
    const started = performance.now();
    const produced = JSON.parse(await nextLine(producer.lines, "publisher"));
    const consumed = JSON.parse(await nextLine(consumer.lines, "consumer"));
    const after = await cpuTicksOf({});
    const wallS = (performance.now() - started) / 1000;
    const cores = coresBetween(before, after, wallS);
    const perMessage = (us: number) => round(us / produced.sent);
    const cpu = {
      publisher: perMessage(produced.cpu_us),
      consumer: perMessage(consumed.cpu_us),
      broker: perMessage((cores.kafka ?? 0) * wallS * 1e6),
    };
    return {
      pair,
      rate,
      ack_p50_ms: round(produced.ack_p50_ms),
      ack_p99_ms: round(produced.ack_p99_ms),
      arrival_p50_ms: round(consumed.arrival_p50_ms),
      arrival_p99_ms: round(consumed.arrival_p99_ms),
      messages_per_request: round(produced.sent / produced.requests),
      cpu_us_per_message: { ...cpu, total: round(cpu.publisher + cpu.consumer + cpu.broker) },
      failed: produced.failed,
      duplicates: consumed.duplicates,
    };
  } finally {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.deleteGroups([`${topic}-group`]).catch(() => undefined);
    await admin.disconnect();
  }
}

function medianOf(samples: Sample[]): Sample {
  const m = (pick: (s: Sample) => number) => median(samples.map(pick));
  const first = samples[0]!;
  return {
    pair: first.pair,
    rate: first.rate,
    ack_p50_ms: m((s) => s.ack_p50_ms),
    ack_p99_ms: m((s) => s.ack_p99_ms),
    arrival_p50_ms: m((s) => s.arrival_p50_ms),
    arrival_p99_ms: m((s) => s.arrival_p99_ms),
    messages_per_request: m((s) => s.messages_per_request),
    cpu_us_per_message: {
      publisher: m((s) => s.cpu_us_per_message.publisher),
      consumer: m((s) => s.cpu_us_per_message.consumer),
      broker: m((s) => s.cpu_us_per_message.broker),
      total: m((s) => s.cpu_us_per_message.total),
    },
    failed: samples.reduce((a, s) => a + s.failed, 0),
    duplicates: samples.reduce((a, s) => a + s.duplicates, 0),
  };
}

async function main() {
  const { values } = benchArgs({
    options: {
      role: { type: "string" },
      client: { type: "string", default: "kafkajs" },
      topic: { type: "string" },
      prefix: { type: "string" },
      expected: { type: "string" },
      rate: { type: "string" },
      rates: { type: "string", default: "1000,5000,20000" },
      pairs: { type: "string", default: DEFAULT_PAIRS },
      seconds: { type: "string", default: "10" },
      runs: { type: "string", default: "3" },
      json: { type: "boolean", default: false },
    },
  });
  const client = values.client as Client;
  if (values.role === "produce")
    return produce(client, values.prefix!, Number(values.rate), Number(values.seconds));
  if (values.role === "consume") return consumeRole(client, values.topic!, Number(values.expected));

  const rates = values.rates.split(",").map(Number);
  const pairs = values.pairs.split(",");
  const seconds = Number(values.seconds);
  const samples: Sample[] = [];
  for (let run = 0; run < Number(values.runs); run++) {
    for (const rate of rates) {
      const order = run % 2 === 0 ? pairs : [...pairs].reverse();
      for (const pair of order) {
        const sample = await measure(pair, rate, seconds, run);
        samples.push(sample);
        if (!values.json) console.log(`run ${run + 1}`, JSON.stringify(sample));
      }
    }
  }
  const medians = rates.flatMap((rate) =>
    pairs.map((pair) => medianOf(samples.filter((s) => s.pair === pair && s.rate === rate))),
  );
  const report = {
    pairs: "publisher/consumer",
    load_average: os.loadavg().map(round),
    runs: Number(values.runs),
    seconds,
    medians,
  };
  console.log(values.json ? JSON.stringify(report) : JSON.stringify(report, null, 2));
}

await main();
