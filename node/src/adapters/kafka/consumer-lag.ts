/**
 * The workers' consumer lag per queue, asked of the broker with kafkajs'
 * admin client (contract: ports/consumer-lag.ts). One admin connection,
 * opened on first use and kept; a failed call drops it, so the next call
 * connects afresh (a restarted broker, for one).
 */
import "./kafkajs-idle-timers.js"; // before kafkajs is used: its idle timers
import { type Admin, Kafka, logLevel } from "kafkajs";
import { TOPICS, topicName } from "../../domain/envelope.js";
import type { ConsumerLag, QueueLag } from "../../ports/consumer-lag.js";
import { workerGroupOf } from "./kafka-task-consumer.js";

export class KafkaConsumerLag implements ConsumerLag {
  private readonly kafka: Kafka;
  private admin: Promise<Admin> | null = null;

  constructor(
    brokers: string[],
    clientId: string,
    private readonly topicPrefix: string,
  ) {
    this.kafka = new Kafka({
      clientId,
      brokers,
      logLevel: logLevel.NOTHING,
      connectionTimeout: 2000,
      requestTimeout: 3000,
      retry: { retries: 0 },
    });
  }

  async lag(): Promise<QueueLag[]> {
    const admin = await this.connected();
    try {
      const existing = new Set(await admin.listTopics());
      const queues: QueueLag[] = [];
      for (const queue of TOPICS) {
        const topic = topicName(this.topicPrefix, queue);
        if (!existing.has(topic)) continue;
        const group = workerGroupOf(this.topicPrefix, queue);
        const latest = await admin.fetchTopicOffsets(topic);
        const [committed] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
        const committedOf = new Map(
          (committed?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]),
        );
        let lag = 0;
        const partitions = latest.map((p) => {
          const at = committedOf.get(p.partition);
          const committedAt = at !== undefined && at >= 0 ? at : null;
          // A group that has committed nothing has the whole partition ahead of it.
          lag += Math.max(0, Number(p.high) - (committedAt ?? Number(p.low)));
          return { partition: p.partition, latest: Number(p.high), committed: committedAt };
        });
        queues.push({ queue, topic, group, lag, partitions });
      }
      return queues;
    } catch (error) {
      this.drop();
      throw error;
    }
  }

  async close(): Promise<void> {
    const admin = this.admin;
    this.admin = null;
    await (await admin?.catch(() => null))?.disconnect().catch(() => undefined);
  }

  private connected(): Promise<Admin> {
    if (!this.admin) {
      const admin = this.kafka.admin();
      this.admin = admin.connect().then(() => admin);
      this.admin.catch(() => this.drop());
    }
    return this.admin;
  }

  private drop(): void {
    const admin = this.admin;
    this.admin = null;
    void admin?.then((a) => a.disconnect()).catch(() => undefined);
  }
}
