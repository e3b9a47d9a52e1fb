/**
 * What the harness can see of a running topology beyond the database: each
 * process's Prometheus metrics, the worker groups' Kafka lag and members, and
 * the sizes of the hot tier's sets. The chaos run writes them next to its
 * report (a run that did not quiesce needs them to be understood); the soak
 * samples consumer lag and the outbox depth from here.
 */

import "../../node/src/adapters/kafka/kafkajs-idle-timers.js"; // before kafkajs is used: its idle timers
import { Redis } from "ioredis";
import { Kafka, logLevel } from "kafkajs";
import { TOPICS, topicName } from "../../node/src/domain/envelope.js";
import { HOT_SHARD_COUNT } from "../../node/src/domain/shard.js";
import { REDIS_PREFIX, TOPIC_PREFIX, type Topology } from "./topology.js";

const groupOf = (kind: string) => `${TOPIC_PREFIX}chronofence-workers.${kind}`;

/** Every metrics page of every process, prefixed with the process's node id (lines starting cf_). */
export async function scrapeAll(topology: Topology): Promise<Map<string, string>> {
  const pages = new Map<string, string>();
  for (const p of topology.processes) {
    const ports = p.spec.httpPort !== undefined ? [p.spec.httpPort] : p.metricsPorts;
    for (const port of ports) {
      const text = await fetch(`http://127.0.0.1:${port}/metrics`, {
        signal: AbortSignal.timeout(3000),
      }).then(
        (r) => r.text(),
        () => "",
      );
      pages.set(`${p.nodeId}:${port}`, text);
    }
  }
  return pages;
}

/** Sum of a metric's series in one page (those whose labels contain `labels`). */
export function metricSum(page: string, name: string, labels = ""): number {
  let sum = 0;
  for (const line of page.split("\n")) {
    if (!(line.startsWith(`${name}{`) || line.startsWith(`${name} `))) continue;
    if (!line.slice(0, line.lastIndexOf(" ")).includes(labels)) continue;
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (Number.isFinite(value)) sum += value;
  }
  return sum;
}

export interface GroupLag {
  queue: string;
  state: string;
  members: string[];
  /** Messages published and not committed by the group, over its partitions. */
  lag: number;
}

/** Each worker group's state, members and lag (from the broker's own listener, never partitioned). */
export async function kafkaLag(brokers: string): Promise<GroupLag[]> {
  const kafka = new Kafka({
    clientId: "chaos-diagnose",
    brokers: [brokers],
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const described = await admin.describeGroups(TOPICS.map(groupOf));
    const out: GroupLag[] = [];
    for (const kind of TOPICS) {
      const topic = topicName(TOPIC_PREFIX, kind);
      const ends = await admin.fetchTopicOffsets(topic);
      const [committed] = await admin.fetchOffsets({ groupId: groupOf(kind), topics: [topic] });
      let lag = 0;
      for (const end of ends) {
        const at = committed?.partitions.find((p) => p.partition === end.partition)?.offset ?? "-1";
        lag += Number(end.offset) - Math.max(0, Number(at));
      }
      const group = described.groups.find((g) => g.groupId === groupOf(kind));
      out.push({
        queue: kind,
        state: group?.state ?? "unknown",
        members: (group?.members ?? []).map((m) => m.clientId),
        lag,
      });
    }
    return out;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/**
 * Live workers that are not members of a queue's group (evidence F2: a
 * consumer out of its group while its worker reports it up). A worker's
 * consumer of `queue` has client id `chronofence-<node id>-<queue>`.
 */
export function missingMembers(
  groups: readonly GroupLag[],
  workerNodeIds: readonly string[],
): Array<{ queue: string; nodeId: string }> {
  return groups.flatMap((g) =>
    workerNodeIds
      .filter((id) => !g.members.includes(`chronofence-${id}-${g.queue}`))
      .map((nodeId) => ({ queue: g.queue, nodeId })),
  );
}

export interface HotTierSizes {
  due: number;
  claimed: number;
  /**
   * Claims whose run_at has passed: fired or firing and not yet acknowledged by the broker, or
   * published and waiting for the next claim round to be removed (up to about 100 ms).
   */
  claimedPastDue: number;
}

export async function hotTierSizes(redisUrl: string, prefix = REDIS_PREFIX): Promise<HotTierSizes> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  redis.on("error", () => undefined);
  await redis.connect();
  try {
    const sizes = { due: 0, claimed: 0, claimedPastDue: 0 };
    const nowMs = Date.now();
    for (let shard = 0; shard < HOT_SHARD_COUNT; shard++) {
      sizes.due += await redis.zcard(`${prefix}:{${shard}}:due`);
      const claimed = await redis.zrange(`${prefix}:{${shard}}:claimed`, 0, -1);
      sizes.claimed += claimed.length;
      // Members are "<run_at ms>:<id>".
      sizes.claimedPastDue += claimed.filter((m) => Number(m.split(":")[0]) < nowMs).length;
    }
    return sizes;
  } finally {
    redis.disconnect();
  }
}

/** A text page of everything above, for a run that must be understood after the fact. */
export async function diagnostics(topology: Topology): Promise<string> {
  const parts: string[] = [`# diagnostics at ${new Date().toISOString()}`];
  const lag = await kafkaLag(topology.kafka.brokers).catch((e: Error) => e.message);
  parts.push(`## kafka worker groups\n${JSON.stringify(lag, null, 1)}`);
  if (typeof lag !== "string") {
    const live = topology.ofKind("worker").filter((p) => p.alive && !p.paused);
    const missing = missingMembers(
      lag,
      live.map((p) => p.nodeId),
    );
    parts.push(`## live workers missing from a group (F2)\n${JSON.stringify(missing)}`);
  }
  const sizes = await hotTierSizes(topology.redis.url).catch((e: Error) => e.message);
  parts.push(`## hot tier\n${JSON.stringify(sizes)}`);
  for (const [name, page] of await scrapeAll(topology)) {
    const lines = page.split("\n").filter((l) => l.startsWith("cf_") && !l.startsWith("cf_nodejs"));
    parts.push(`## ${name}\n${lines.join("\n")}`);
  }
  return `${parts.join("\n\n")}\n`;
}
