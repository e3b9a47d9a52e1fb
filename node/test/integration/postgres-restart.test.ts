/**
 * Nothing lost through a Postgres crash and restart (invariant 2), while
 * dispatchers and workers run. The shared Postgres on 5432 is never touched:
 * this file starts a Postgres cluster of its own on another port
 * (bench/chaos/services.ts, initdb and pg_ctl) and stops it in `immediate`
 * mode, a crash that recovers from the WAL on start.
 *
 * The API runs in the test process; two dispatch processes (dispatcher,
 * pre-loader, reconciler) and two workers run as children of the built CLI.
 * Tasks are submitted all along, before, during and after the outage, each
 * due a little later and each sleeping a while, so that when Postgres goes
 * down some are SCHEDULED, some ARMED or in Kafka and some RUNNING. The
 * outage outlasts the shard leases and the workers' execution leases. Then:
 * every task acknowledged with 201 completes, none goes DEAD, none ran
 * before its run_at, and every process is still running (none crashed on a
 * connection that Postgres ended).
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type OwnPostgres, startOwnPostgres } from "../../../bench/chaos/services.js";
import { systemClock } from "../../src/adapters/clock/system-clock.js";
import type { Config } from "../../src/config/config.js";
import { ensureDatabase, runMaintenance, runMigrations } from "../../src/main/admin.js";
import { call, newTenant, startTestApi, type TestApi, type TestTenant } from "./support/api.js";
import { newTopicPrefix, requireKafka } from "./support/kafka.js";
import { PIPELINE_TIMINGS } from "./support/pipeline.js";
import { killRolesChildren, type RolesChild, startRolesChild } from "./support/roles-child.js";
import { requireRedis, TEST_REDIS_URL, testConfig, withPg } from "./support/services.js";

const LEASE_TTL_MS = 4000;
const WORKER_LEASE_MS = 3000;
/** Longer than either lease: every shard lease and execution lease expires while it is down. */
const OUTAGE_MS = LEASE_TTL_MS + 2000;
const TASK_DELAY_MS = 1500;
const HANDLER_MS = 400;

let dir: string;
let postgres: OwnPostgres;
let config: Config;
let api: TestApi;
let tenant: TestTenant;
const children: RolesChild[] = [];

beforeAll(async () => {
  await requireRedis();
  await requireKafka();
  dir = await mkdtemp(path.join(os.tmpdir(), "cf-pg-restart-"));
  postgres = await startOwnPostgres(dir);
  const url = postgres.url("chronofence");
  await ensureDatabase(url);
  config = testConfig(url, {
    ...PIPELINE_TIMINGS,
    topicPrefix: newTopicPrefix("postgres-restart"),
    leaseTtlMs: LEASE_TTL_MS,
    // A request during the outage fails fast (connection refused) rather than at a deadline.
    pgConnectTimeoutMs: 1000,
  });
  await runMigrations(config);
  await runMaintenance(config, systemClock);
  tenant = await newTenant(config);
  api = await startTestApi(config);
  const common = {
    DATABASE_URL: url,
    REDIS_URL: TEST_REDIS_URL,
    CF_REDIS_PREFIX: config.redisKeyPrefix,
    CF_TOPIC_PREFIX: config.topicPrefix,
    CF_KAFKA_PARTITIONS: String(config.kafkaPartitions),
    CF_HORIZON_DAYS: String(config.horizonDays),
    CF_RETENTION_DAYS: String(config.retentionDays),
    CF_PG_CONNECT_TIMEOUT_MS: "1000",
    CF_METRICS_PORT: "0",
    CF_WORKER_METRICS_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: process.env.CF_TEST_LOG_LEVEL ?? "silent",
  };
  const dispatchEnv = {
    ...common,
    CF_LEASE_TTL_MS: String(LEASE_TTL_MS),
    CF_LEASE_HEARTBEAT_MS: String(PIPELINE_TIMINGS.leaseHeartbeatMs),
    CF_LEASE_SAFETY_MARGIN_MS: String(PIPELINE_TIMINGS.leaseSafetyMarginMs),
    CF_CLAIM_INTERVAL_MS: String(PIPELINE_TIMINGS.claimIntervalMs),
    CF_CLAIM_LOOKAHEAD_MS: String(PIPELINE_TIMINGS.claimLookaheadMs),
    CF_CLAIM_TTL_MS: String(PIPELINE_TIMINGS.claimTtlMs),
    CF_DISPATCH_TIMEOUT_MS: String(PIPELINE_TIMINGS.dispatchTimeoutMs),
    CF_PRELOAD_INTERVAL_MS: String(PIPELINE_TIMINGS.preloadIntervalMs),
    CF_RECONCILE_INTERVAL_MS: String(PIPELINE_TIMINGS.reconcileIntervalMs),
  };
  const workerEnv = {
    ...common,
    // A task whose start the outage delayed past its tenant's grace is re-published to overdue.
    CF_WORKER_QUEUES: "standard,overdue",
    CF_WORKER_LEASE_MS: String(WORKER_LEASE_MS),
    CF_WORKER_HEARTBEAT_MS: "300",
    CF_WORKER_SESSION_TIMEOUT_MS: String(PIPELINE_TIMINGS.workerSessionTimeoutMs),
  };
  for (const n of [1, 2]) {
    children.push(
      await startRolesChild("dispatcher,preloader,reconciler", {
        ...dispatchEnv,
        CF_NODE_ID: `dispatch-${n}`,
      }),
      await startRolesChild("worker", { ...workerEnv, CF_NODE_ID: `worker-${n}` }),
    );
  }
  // initdb, the migrations and four processes: slow on a loaded machine.
}, 300_000);

afterAll(async () => {
  killRolesChildren();
  await api?.stop();
  await postgres?.stop("immediate");
  if (dir) await rm(dir, { recursive: true, force: true });
});

const statusCounts = () =>
  withPg(postgres.url("chronofence"), async (c) => {
    const rows = (await c.query("SELECT status, count(*)::int AS n FROM tasks GROUP BY status"))
      .rows as Array<{ status: string; n: number }>;
    return Object.fromEntries(rows.map((r) => [r.status, r.n])) as Record<string, number>;
  });

it("every acknowledged task completes through a Postgres crash and restart", async () => {
  const acknowledged: string[] = [];
  const refused: number[] = [];
  let submitting = true;
  const submitter = (async () => {
    while (submitting) {
      const answer = await call(api.baseUrl, "POST", "/v1/tasks", {
        key: tenant.apiKey,
        body: {
          type: "sleep",
          payload: { ms: HANDLER_MS },
          delay_ms: TASK_DELAY_MS,
          max_attempts: 10,
          backoff: { base_ms: 100, max_ms: 500 },
        },
      }).catch(() => ({ status: 0, body: null }));
      if (answer.status === 201) acknowledged.push(answer.body.id);
      else refused.push(answer.status);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  try {
    // Flowing: some completed, and some in every earlier state.
    await expect
      .poll(async () => (await statusCounts()).COMPLETED ?? 0, { timeout: 60_000, interval: 200 })
      .toBeGreaterThanOrEqual(5);
    const before = await statusCounts();
    const pendingAtCrash = (before.SCHEDULED ?? 0) + (before.ARMED ?? 0) + (before.RUNNING ?? 0);
    expect(pendingAtCrash).toBeGreaterThan(0);
    const acknowledgedAtCrash = acknowledged.length;

    await postgres.stop("immediate");
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    // While it was down, submissions were refused (503), not acknowledged.
    expect(refused.filter((status) => status === 503).length).toBeGreaterThan(0);
    await postgres.start();

    // After the restart the API acknowledges again.
    await expect
      .poll(() => acknowledged.length - acknowledgedAtCrash, { timeout: 60_000, interval: 200 })
      .toBeGreaterThanOrEqual(5);
  } finally {
    submitting = false;
    await submitter;
  }
  expect(refused.filter((status) => status !== 503)).toEqual([]);

  const url = postgres.url("chronofence");
  const unfinished = () =>
    withPg(
      url,
      async (c) =>
        (
          await c.query(
            `SELECT id, status, attempt, run_at, armed_at, dispatch_shard, dispatch_epoch,
                    (SELECT json_agg(json_build_object('name', l.name, 'owner', l.owner, 'epoch', l.epoch,
                                                       'expires_at', l.expires_at))
                       FROM leases l WHERE l.name IN ('leader', 'shard:' || t.dispatch_shard)) AS leases
               FROM tasks t WHERE id = ANY($1::uuid[]) AND status <> 'COMPLETED'`,
            [acknowledged],
          )
        ).rows,
    );
  await expect.poll(unfinished, { timeout: 180_000, interval: 500 }).toEqual([]);
  const summary = await withPg(
    url,
    async (c) =>
      (
        await c.query(
          `SELECT count(*)::int AS completed,
                  count(*) FILTER (WHERE started_at < run_at)::int AS early,
                  count(*) FILTER (WHERE attempt > 1)::int AS retried
             FROM tasks WHERE id = ANY($1::uuid[])`,
          [acknowledged],
        )
      ).rows[0],
  );
  expect(summary).toMatchObject({ completed: acknowledged.length, early: 0 });
  expect(await withPg(url, (c) => c.query("SELECT 1 FROM dead_letters"))).toMatchObject({
    rowCount: 0,
  });
  // No process crashed on the connections Postgres ended.
  for (const child of children) expect(child.process.exitCode).toBeNull();
  expect(children.map((c) => c.process.signalCode)).toEqual(children.map(() => null));
  console.log(
    `postgres-restart: ${acknowledged.length} acknowledged, ${refused.length} refused during the outage, ${summary.retried} retried`,
  );
}, 420_000);
