/**
 * A coarse timeline of a chaos run, sampled every few seconds from outside:
 * tasks by status, the worker groups' Kafka lag and members, and the
 * processes alive. It goes into the report, so that a run which stalls (a
 * backlog that never drains, a group that never settles) can be read
 * afterwards without the processes.
 */
import { kafkaLag } from "./diagnose.js";
import type { Topology } from "./topology.js";

export interface TimelinePoint {
  atMs: number;
  /** Tasks by status (terminal ones included); null if Postgres did not answer. */
  statuses: Record<string, number> | null;
  /** Lag by queue and member count, e.g. { standard: { lag: 12, members: 3 } }; null if Kafka did not answer. */
  kafka: Record<string, { lag: number; members: number; state: string }> | null;
  alive: number;
}

export class Timeline {
  readonly points: TimelinePoint[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sampling: Promise<void> = Promise.resolve();

  constructor(
    private readonly topology: Topology,
    private readonly everyMs = 5000,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.sampling = this.sampling.then(() => this.sample());
    }, this.everyMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.sampling;
  }

  private async sample(): Promise<void> {
    const t = this.topology;
    const statuses = await t
      .withDb(async (c) => {
        const { rows } = await c.query(
          "SELECT status, count(*)::int AS n FROM tasks GROUP BY status",
        );
        return Object.fromEntries(rows.map((r) => [r.status, r.n])) as Record<string, number>;
      })
      .catch(() => null);
    const lag = await kafkaLag(t.kafka.brokers).catch(() => null);
    this.points.push({
      atMs: Date.now(),
      statuses,
      kafka:
        lag &&
        Object.fromEntries(
          lag.map((g) => [g.queue, { lag: g.lag, members: g.members.length, state: g.state }]),
        ),
      alive: t.processes.filter((p) => p.alive && !p.paused).length,
    });
  }
}
