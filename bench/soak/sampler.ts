/**
 * What the soak samples at every interval, from outside the processes:
 *  - per process: RSS (/proc/<pid>/status), V8 heap used and the event
 *    loop's p99 delay (its Prometheus page: prom-client's default metrics);
 *  - Postgres: the run database's connections and dead tuples;
 *  - Redis: used memory;
 *  - Kafka: each worker group's lag;
 *  - the outbox: claims past due not yet acknowledged by the broker (fired,
 *    not yet published: diagnose.ts `hotTierSizes`);
 *  - per interval, from counters summed over every process (a restarted
 *    process's counter starting again from zero counts from zero): lease
 *    events (churn), worker retries, dead letters;
 *  - lateness p99 of the tasks that finished in the interval (started_at −
 *    run_at, from the database) and the tasks not yet terminal (backlog).
 * A sample that cannot be taken (a service not answering) is NaN, not zero.
 */
import { readFile } from "node:fs/promises";
import { Redis } from "ioredis";
import { hotTierSizes, kafkaLag, metricSum } from "../chaos/diagnose.js";
import type { Topology } from "../chaos/topology.js";
import type { Sample } from "./growth.js";

/** metric → series label → samples. */
export type SeriesSet = Map<string, Map<string, Sample[]>>;

const COUNTERS = {
  lease_events_per_interval: "cf_lease_events_total",
  retries_per_interval: "cf_worker_retries_total",
  dead_letters_per_interval: "cf_worker_dead_letters_total",
} as const;

async function rssBytes(pid: number | undefined): Promise<number> {
  if (pid === undefined) return Number.NaN;
  const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  return kb === undefined ? Number.NaN : Number(kb) * 1024;
}

async function page(port: number): Promise<string | null> {
  return fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) }).then(
    (r) => (r.ok ? r.text() : null),
    () => null,
  );
}

export class SoakSampler {
  readonly series: SeriesSet = new Map();
  /** Last value of each counter per metrics page, to turn counters into per-interval counts. */
  private readonly lastCounter = new Map<string, number>();
  private lastSampleMs: number;

  constructor(
    private readonly topology: Topology,
    startedAtMs: number,
  ) {
    this.lastSampleMs = startedAtMs;
  }

  private add(metric: string, label: string, atMs: number, value: number): void {
    const byLabel = this.series.get(metric) ?? new Map<string, Sample[]>();
    this.series.set(metric, byLabel);
    const samples = byLabel.get(label) ?? [];
    byLabel.set(label, samples);
    samples.push({ atMs, value });
  }

  async sample(): Promise<void> {
    const t = this.topology;
    const atMs = Date.now();
    const counted: Record<string, number> = Object.fromEntries(
      Object.keys(COUNTERS).map((k) => [k, 0]),
    );
    for (const p of t.processes) {
      this.add("rss_bytes", p.name, atMs, await rssBytes(p.pid));
      const ports = p.spec.httpPort !== undefined ? [p.spec.httpPort] : p.metricsPorts;
      let heap = 0;
      let loopDelay = 0;
      let answered = false;
      for (const port of ports) {
        const text = await page(port);
        if (text === null) continue;
        answered = true;
        heap += metricSum(text, "cf_nodejs_heap_size_used_bytes");
        loopDelay = Math.max(loopDelay, metricSum(text, "cf_nodejs_eventloop_lag_p99_seconds"));
        for (const [series, name] of Object.entries(COUNTERS)) {
          const key = `${p.nodeId}:${port}:${name}`;
          const now = metricSum(text, name);
          const before = this.lastCounter.get(key) ?? 0;
          counted[series]! += now >= before ? now - before : now;
          this.lastCounter.set(key, now);
        }
      }
      this.add("heap_used_bytes", p.name, atMs, answered ? heap : Number.NaN);
      this.add("event_loop_delay_p99_s", p.name, atMs, answered ? loopDelay : Number.NaN);
    }
    for (const [series, value] of Object.entries(counted)) this.add(series, "all", atMs, value);

    const db = await t
      .withDb(async (c) => {
        const since = new Date(this.lastSampleMs).toISOString();
        const { rows } = await c.query(
          `SELECT (SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database()) AS connections,
                  (SELECT coalesce(sum(n_dead_tup), 0)::float8 FROM pg_stat_user_tables) AS dead_tuples,
                  (SELECT count(*)::int FROM tasks
                    WHERE status NOT IN ('COMPLETED', 'DEAD', 'CANCELLED', 'SKIPPED')) AS backlog,
                  (SELECT percentile_cont(0.99) WITHIN GROUP
                          (ORDER BY extract(epoch FROM started_at - run_at) * 1000)
                     FROM tasks WHERE completed_at > $1 AND started_at IS NOT NULL) AS lateness_p99_ms`,
          [since],
        );
        return rows[0];
      })
      .catch(() => null);
    this.add("pg_connections", "all", atMs, db ? db.connections : Number.NaN);
    this.add("pg_dead_tuples", "all", atMs, db ? db.dead_tuples : Number.NaN);
    this.add("tasks_not_terminal", "all", atMs, db ? db.backlog : Number.NaN);
    this.add("lateness_p99_ms", "all", atMs, db?.lateness_p99_ms ?? Number.NaN);

    this.add("redis_used_memory_bytes", "all", atMs, await redisUsedMemory(t.redis.url));
    const lag = await kafkaLag(t.kafka.brokers).catch(() => null);
    for (const g of lag ?? []) this.add("consumer_lag", g.queue, atMs, g.lag);
    const hot = await hotTierSizes(t.redis.url).catch(() => null);
    this.add("outbox_depth", "all", atMs, hot ? hot.claimedPastDue : Number.NaN);
    this.lastSampleMs = atMs;
  }
}

async function redisUsedMemory(url: string): Promise<number> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
  redis.on("error", () => undefined);
  try {
    await redis.connect();
    const info = await redis.info("memory");
    const used = /used_memory:(\d+)/.exec(info)?.[1];
    return used === undefined ? Number.NaN : Number(used);
  } catch {
    return Number.NaN;
  } finally {
    redis.disconnect();
  }
}
