/**
 * Cron herd benchmark: N schedules (default 10,000) all due in the same
 * second, once without jitter and once with `jitter_ms`. Measures
 *  - planning: one in-process planner (all 16 plan shards) turning the N
 *    due schedules into tasks, through the real Postgres and Redis;
 *  - dispatch: the herd's lateness = Kafka arrival − task run_at, with the
 *    API and the dispatcher roles in two child processes, and the lateness
 *    of critical tasks submitted through the API while the herd fires.
 *
 *   npm run bench:cron -- [--schedules 10000] [--jitter-ms 5000] [--lead-s 40] [--json]
 *
 * With --json the last line is one JSON object (one entry per scenario).
 */
import type { ChildProcess } from "node:child_process";
import { Redis } from "ioredis";
import pg from "pg";
import { systemClock } from "../node/src/adapters/clock/system-clock.js";
import { PgLeaseStore } from "../node/src/adapters/pg/lease-store.js";
import { PgPlanStore } from "../node/src/adapters/pg/plan-store.js";
import { createPgPool } from "../node/src/adapters/pg/pool.js";
import { RedisHotTier } from "../node/src/adapters/redis/hot-tier.js";
import { PLAN_FAMILY, Planner, planLeasesOf } from "../node/src/app/schedules/planner.js";
import { LeaseManager } from "../node/src/app/shared/leases.js";
import { Loop } from "../node/src/app/shared/loop.js";
import { planShardOf } from "../node/src/domain/schedule.js";
import { uuidv7From } from "../node/src/main/ids.js";
import { noDispatchMetrics } from "../node/src/ports/dispatch-metrics.js";
import { benchArgs } from "./args.js";
import {
  type Arrival,
  deleteBenchKeys,
  deleteKafkaRun,
  latenessOf,
  prepareBenchDatabase,
  readyMetricsPort,
  sleepMs,
  spawnRoles,
  startArrivalConsumer,
  stopChildren,
  waitForApi,
  waitUntil,
} from "./support.js";

const { values: args } = benchArgs({
  options: {
    json: { type: "boolean", default: false },
    schedules: { type: "string", default: "10000" },
    "jitter-ms": { type: "string", default: "5000" },
    "lead-s": { type: "string", default: "40" },
    "critical-per-s": { type: "string", default: "40" },
    port: { type: "string", default: "18091" },
  },
});
const SCHEDULES = Number(args.schedules);
const JITTER_MS = Number(args["jitter-ms"]);
const LEAD_MS = Number(args["lead-s"]) * 1000;
const CRITICAL_PER_S = Number(args["critical-per-s"]);
const port = Number(args.port);
const baseUrl = `http://127.0.0.1:${port}`;
const DATABASE_URL =
  process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/chronofence_bench_cron";
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const BROKERS = (process.env.KAFKA_BROKERS ?? "127.0.0.1:9092").split(",");
const REDIS_PREFIX = "cf-bench-cron";
const TOPIC_PREFIX = `bench-cron-${Date.now()}.`;
const log = (line: string) => {
  if (!args.json) console.log(line);
};

const child = (roles: string, env: Record<string, string>): ChildProcess =>
  spawnRoles(roles, {
    DATABASE_URL,
    CF_REDIS_PREFIX: REDIS_PREFIX,
    CF_TOPIC_PREFIX: TOPIC_PREFIX,
    ...env,
  });

async function startDispatcher(): Promise<ChildProcess> {
  const dispatcher = child("dispatcher,preloader,reconciler", { CF_METRICS_PORT: "0" });
  await readyMetricsPort(dispatcher, "dispatcher");
  return dispatcher;
}

/** N daily schedules whose one occurrence today is `dueMs` (UTC), inserted in one statement. */
async function insertHerd(db: pg.Client, tenantId: string, dueMs: number, jitterMs: number) {
  const due = new Date(dueMs);
  const expression = `${due.getUTCSeconds()} ${due.getUTCMinutes()} ${due.getUTCHours()} * * *`;
  const newId = uuidv7From(systemClock);
  const ids = Array.from({ length: SCHEDULES }, () => newId());
  await db.query(
    `INSERT INTO schedules (id, tenant_id, name, expression, time_zone, type, payload, priority,
       max_attempts, timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
       misfire_policy, overlap_policy, jitter_ms, paused, plan_shard, planned_through,
       next_occurrence_at, version, created_at, updated_at)
     SELECT u.id, $2, 'herd-' || u.id, $3, 'UTC', 'herd', '{}', 'standard', 3, 30000,
            'exponential', 1000, 3600000, 'fire_once', 'allow', $4, false, u.shard, now(),
            timestamptz 'epoch' + $5 * interval '1 millisecond', 1, now(), now()
       FROM unnest($1::uuid[], $6::smallint[]) AS u (id, shard)`,
    [ids, tenantId, expression, jitterMs, dueMs, ids.map(planShardOf)],
  );
}

/** An in-process planner holding every plan shard; returns ms to plan everything due. */
async function plan(): Promise<{ planMs: number; tasks: number }> {
  const pool = createPgPool({
    connectionString: DATABASE_URL,
    maxConnections: 2,
    statementTimeoutMs: 60_000,
    connectTimeoutMs: 5000,
    role: null,
    applicationName: "bench-cron-planner",
    onError: () => undefined,
  });
  const redis = new Redis(REDIS_URL);
  const nodeId = `bench-planner-${process.pid}`;
  const leases = new LeaseManager(new PgLeaseStore(pool), systemClock, noDispatchMetrics, {
    nodeId,
    ttlMs: 60_000,
    safetyMarginMs: 2000,
    families: [PLAN_FAMILY],
    wantLeader: false,
  });
  const planner = new Planner(
    new PgPlanStore(pool),
    new RedisHotTier(redis, REDIS_PREFIX),
    systemClock,
    uuidv7From(systemClock),
    planLeasesOf(leases),
    {
      planned: () => undefined,
      misfired: () => undefined,
      released: () => undefined,
      staleLease: () => undefined,
    },
    {
      nodeId,
      planAheadMs: 600_000,
      overlapLeadMs: 3000,
      misfireGraceMs: 60_000,
      fireAllCap: 100,
      maxPerPass: 1000,
      batchSize: 1000,
      hotWindowMs: 3_600_000,
    },
    (error) => {
      throw error;
    },
  );
  let heartbeat: Loop | undefined;
  try {
    while (planLeasesOf(leases).owned().length < 16) await leases.heartbeat();
    // As in the planner role: the leases are renewed while it plans.
    heartbeat = new Loop(
      () => leases.heartbeat().then(() => false),
      3000,
      () => undefined,
    ).start(3000);
    const startMs = performance.now();
    let tasks = 0;
    for (;;) {
      const report = await planner.pass();
      tasks += report.tasks;
      if (!report.more) break;
    }
    return { planMs: performance.now() - startMs, tasks };
  } finally {
    await heartbeat?.stop();
    await leases.releaseAll();
    redis.disconnect();
    await pool.end();
  }
}

/** Critical tasks through the API, open loop, from `fromMs` to `untilMs`, each due 300 ms later. */
async function submitCritical(apiKey: string, fromMs: number, untilMs: number) {
  const runAts = new Map<string, number>();
  const pending: Promise<void>[] = [];
  await sleepMs(fromMs - Date.now());
  const intervalMs = 1000 / CRITICAL_PER_S;
  for (let at = fromMs; at < untilMs; at += intervalMs) {
    await sleepMs(at - Date.now());
    pending.push(
      fetch(`${baseUrl}/v1/tasks`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ type: "critical.probe", priority: "critical", delay_ms: 300 }),
      })
        .then((r) => r.json())
        .then((task: { id: string; run_at: string }) => {
          runAts.set(task.id, Date.parse(task.run_at));
        }),
    );
  }
  await Promise.all(pending);
  return runAts;
}

/** Lateness (Kafka arrival − run_at) of the tasks in `runAts`; early = arrived before run_at. */
function latenessOfTasks(runAts: Map<string, number>, arrivals: Map<string, Arrival>) {
  const lateness: number[] = [];
  let lost = 0;
  let early = 0;
  for (const [id, runAtMs] of runAts) {
    const arrival = arrivals.get(id);
    if (arrival === undefined) {
      lost++;
      continue;
    }
    if (arrival.arrivedMs < runAtMs) early++;
    lateness.push(arrival.arrivedMs - runAtMs);
  }
  return { count: runAts.size, ...latenessOf(lateness), lost, early };
}

async function scenario(
  db: pg.Client,
  tenantId: string,
  apiKey: string,
  arrivals: Map<string, Arrival>,
  jitterMs: number,
) {
  await db.query("TRUNCATE schedule_occurrences, schedules");
  const dueMs = Math.ceil((Date.now() + LEAD_MS) / 1000) * 1000;
  await insertHerd(db, tenantId, dueMs, jitterMs);
  const { planMs, tasks } = await plan();
  log(
    `jitter ${jitterMs} ms: planned ${tasks} tasks for ${SCHEDULES} schedules in ${Math.round(planMs)} ms`,
  );
  const herd = new Map<string, number>();
  const rows = await db.query(
    "SELECT id, (extract(epoch FROM run_at) * 1000)::float8 AS run_at_ms FROM tasks WHERE schedule_id IS NOT NULL AND run_at >= to_timestamp($1 / 1000.0)",
    [dueMs],
  );
  for (const row of rows.rows) herd.set(row.id, Math.round(row.run_at_ms));
  const critical = await submitCritical(apiKey, dueMs - 2000, dueMs + jitterMs + 3000);
  const deadlineMs = dueMs + jitterMs + 60_000;
  const done = () => [...herd.keys(), ...critical.keys()].every((id) => arrivals.has(id));
  await waitUntil(done, deadlineMs, 200);
  const result = {
    jitter_ms: jitterMs,
    plan_ms: Math.round(planMs),
    planned_tasks: tasks,
    herd: latenessOfTasks(herd, arrivals),
    critical: latenessOfTasks(critical, arrivals),
  };
  log(
    `  herd lateness (arrival − run_at): p50 ${result.herd.p50_ms} ms, p99 ${result.herd.p99_ms} ms, max ${result.herd.max_ms} ms, lost ${result.herd.lost}, early ${result.herd.early}`,
  );
  log(
    `  critical meanwhile (${result.critical.count}): p50 ${result.critical.p50_ms} ms, p99 ${result.critical.p99_ms} ms, max ${result.critical.max_ms} ms, lost ${result.critical.lost}`,
  );
  return result;
}

async function main(): Promise<void> {
  const { apiKey, tenantId } = await prepareBenchDatabase(DATABASE_URL, [
    "schedule_occurrences",
    "schedules",
    "tasks",
    "idempotency_keys",
    "audit_log",
    "leases",
  ]);
  const api = await waitForApi(child("api", { PORT: String(port) }), baseUrl, 200);
  const dispatcher = await startDispatcher();
  const db = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
  const arrivals = new Map<string, Arrival>();
  const consumer = await startArrivalConsumer(BROKERS, TOPIC_PREFIX, arrivals, { count: 0 });
  try {
    log(`${SCHEDULES} schedules due in the same second, ${LEAD_MS / 1000} s ahead`);
    const results = [];
    for (const jitterMs of [0, JITTER_MS]) {
      results.push(await scenario(db, tenantId, apiKey, arrivals, jitterMs));
    }
    const summary = { bench: "cron", schedules: SCHEDULES, scenarios: results };
    if (args.json) console.log(JSON.stringify(summary));
  } finally {
    await consumer.disconnect();
    await db.end();
    await stopChildren([api, dispatcher]);
    await deleteKafkaRun(BROKERS, TOPIC_PREFIX, [`${TOPIC_PREFIX}bench`]);
    await deleteBenchKeys(REDIS_PREFIX);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
