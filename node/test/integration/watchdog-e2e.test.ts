/**
 * The watchdog against a whole running Chronofence: API in-process, the
 * dispatch roles and the planner in a child process (so it can be paused),
 * a worker in-process; the watchdog's windows shortened. Canaries complete
 * (no alert); SIGSTOP of the dispatcher → the canary alert fires; SIGCONT →
 * it clears. The dead man's switch fires for a scheduled `sleep` longer than
 * the schedule's expect_within_ms.
 */
import { pino } from "pino";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { systemClock } from "../../src/adapters/clock/system-clock.js";
import { HttpWatchdogApi } from "../../src/adapters/http/watchdog-api.js";
import { CANARY_ALERT, Watchdog } from "../../src/app/watchdog/watchdog.js";
import { ChronofenceClient } from "../../src/client/client.js";
import { type RunningWorker, startWorker } from "../../src/main/worker.js";
import type { Alert, AlertSink } from "../../src/ports/watchdog.js";
import { type ApiFixture, call, startApiFixture } from "./support/api.js";
import { newTopicPrefix, requireKafka } from "./support/kafka.js";
import {
  fixtureEnv,
  killRolesChildren,
  type RolesChild,
  startRolesChild,
} from "./support/roles-child.js";
import { withPg } from "./support/services.js";
import { waitUntil } from "./support/wait.js";

vi.setConfig({ testTimeout: 180_000 });

/** The watchdog's window, shortened: a canary not COMPLETED 4 s after submission alerts. */
const DEADLINE_MS = 4000;

let fixture: ApiFixture;
let roles: RolesChild;
let worker: RunningWorker;

beforeAll(async () => {
  await requireKafka();
  fixture = await startApiFixture({
    topicPrefix: newTopicPrefix("watchdog-e2e"),
    metricsPort: 0,
    workerMetricsPort: 0,
    kafkaPartitions: 2,
    workerLeaseMs: 3000,
    workerHeartbeatMs: 500,
    workerSessionTimeoutMs: 6000,
  });
  roles = await startRolesChild("dispatcher,preloader,reconciler,planner", {
    ...fixtureEnv(fixture, "paused-dispatcher"),
    CF_METRICS_PORT: "0",
    CF_LEASE_TTL_MS: "6000",
    CF_LEASE_HEARTBEAT_MS: "300",
    CF_LEASE_SAFETY_MARGIN_MS: "1000",
    CF_CLAIM_INTERVAL_MS: "50",
    CF_CLAIM_LOOKAHEAD_MS: "1000",
    CF_PRELOAD_INTERVAL_MS: "500",
    CF_RECONCILE_INTERVAL_MS: "500",
    CF_PLAN_INTERVAL_MS: "500",
  });
  worker = await startWorker(
    fixture.config,
    systemClock,
    pino({ level: process.env.CF_TEST_LOG_LEVEL ?? "silent" }),
  );
});

afterAll(async () => {
  roles?.process.kill("SIGCONT");
  killRolesChildren();
  await worker?.stop();
  await fixture?.stop();
});

/** A watchdog whose alerts are recorded as fired and resolved. */
function watchdog() {
  const fired: Alert[] = [];
  const resolved: Alert[] = [];
  const sink: AlertSink = {
    fire: async (alert) => {
      fired.push(alert);
    },
    resolve: async (alert) => {
      resolved.push(alert);
    },
  };
  const client = new ChronofenceClient({
    url: fixture.api.baseUrl,
    apiKey: fixture.tenant.apiKey,
    timeoutMs: 5000,
  });
  const dog = new Watchdog(
    new HttpWatchdogApi(client),
    sink,
    systemClock,
    {
      canaryType: "chronofence.canary",
      canaryIntervalMs: 500,
      canaryDelayMs: 100,
      canaryDeadlineMs: DEADLINE_MS,
      historyLimit: 20,
      // The planner child runs with the default look-ahead (10 min: 300 occurrences of a
      // schedule every 2 s are planned ahead of the ones the switch looks at).
      planAheadMs: fixture.config.cronPlanAheadMs,
    },
    (error) => {
      throw error;
    },
  );
  return { dog, fired, resolved };
}

/** How long the watchdog may take to see a completion: its pause between checks, plus a check. */
const CHECK_SLACK_MS = 1000;

/** From submission to COMPLETED, per the database; null while not completed. */
const canaryTookMs = (id: unknown) =>
  // A submission the API did not answer is a canary that never completes (task_id null).
  id === null
    ? Promise.resolve(null)
    : withPg(
        fixture.db.url,
        async (c) =>
          (
            await c.query(
              `SELECT (extract(epoch FROM completed_at - created_at) * 1000)::float8 AS ms
             FROM tasks WHERE id = $1`,
              [id],
            )
          ).rows[0]?.ms as number | null,
      );

const completedCanaries = () =>
  withPg(
    fixture.db.url,
    async (c) =>
      (
        await c.query(
          "SELECT count(*)::int AS n FROM tasks WHERE type = 'chronofence.canary' AND status = 'COMPLETED'",
        )
      ).rows[0].n as number,
  );

it("canaries complete; SIGSTOP of the dispatcher fires the alert, SIGCONT clears it", async () => {
  const { dog, fired, resolved } = watchdog();
  // Running normally for longer than the window: canaries complete, nothing fires.
  const calmUntil = Date.now() + 2 * DEADLINE_MS;
  while (Date.now() < calmUntil) {
    await dog.check();
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  expect(await completedCanaries()).toBeGreaterThan(0);
  // No false alarm: the machine is shared, so a canary may really be late; an alert is then
  // right, but only for a canary that had not completed within the window. The watchdog
  // sees a completion at its next check, so one that completed less than a check (200 ms
  // pause, plus the check itself) before the deadline may still be called late.
  for (const alert of fired.filter((a) => a.key === CANARY_ALERT)) {
    expect(alert.details.age_ms).toBeGreaterThanOrEqual(DEADLINE_MS);
    const tookMs = await canaryTookMs(alert.details.task_id);
    expect(tookMs === null || tookMs > DEADLINE_MS - CHECK_SLACK_MS).toBe(true);
  }

  roles.process.kill("SIGSTOP");
  const firedBeforeStop = fired.length;
  await waitUntil(
    "the canary alert",
    async () => {
      await dog.check();
      return fired.some((a) => a.key === CANARY_ALERT);
    },
    (firing) => firing,
    60_000,
    200,
  );
  // Not before a canary's deadline, and for a canary that really had not completed (the
  // dispatcher is stopped: it completes only after SIGCONT, if it ran at all).
  const alert = fired.slice(firedBeforeStop).find((a) => a.key === CANARY_ALERT)!;
  expect(alert.details.age_ms).toBeGreaterThanOrEqual(DEADLINE_MS);
  const tookMs = await canaryTookMs(alert.details.task_id);
  expect(tookMs === null || tookMs > DEADLINE_MS - CHECK_SLACK_MS).toBe(true);
  expect(dog.alerts.has(CANARY_ALERT)).toBe(true);

  roles.process.kill("SIGCONT");
  await waitUntil(
    "the canary alert to clear",
    async () => {
      await dog.check();
      return resolved.some((a) => a.key === CANARY_ALERT);
    },
    (cleared) => cleared,
    90_000,
    200,
  );
  expect(dog.alerts.has(CANARY_ALERT)).toBe(false);
});

it("the dead man's switch fires for a scheduled handler that never completes in time", async () => {
  const created = await call(fixture.api.baseUrl, "POST", "/v1/schedules", {
    key: fixture.tenant.apiKey,
    body: {
      name: "slow-job",
      expression: "*/2 * * * * *",
      type: "sleep",
      payload: { ms: 8000 },
      expect_within_ms: 1000,
    },
  });
  expect(created.status).toBe(201);
  const key = `schedule:${created.body.id}`;
  const running = () =>
    withPg(
      fixture.db.url,
      async (c) =>
        (
          await c.query(
            "SELECT count(*)::int AS n FROM tasks WHERE schedule_id = $1 AND status = 'RUNNING'",
            [created.body.id],
          )
        ).rows[0].n as number,
    );
  // The watchdog starts once occurrences run, so the one it judges has a recorded run
  // (from the start, it would fire at once with "no run recorded").
  await expect.poll(running, { timeout: 60_000, interval: 100 }).toBeGreaterThan(0);
  // ... and once that run's own deadline (its occurrence + expect_within_ms, no jitter) has
  // passed, so the latest occurrence the switch judges is that one or a later one.
  const firstRunDeadlineMs = await withPg(
    fixture.db.url,
    async (c) =>
      (
        await c.query(
          `SELECT (extract(epoch FROM min(o.scheduled_for)) * 1000)::float8 + 1000 AS ms
             FROM schedule_occurrences o JOIN tasks t ON t.id = o.task_id
            WHERE o.schedule_id = $1 AND t.status = 'RUNNING'`,
          [created.body.id],
        )
      ).rows[0].ms as number,
  );
  await waitUntil(
    "the first run's deadline",
    () => Date.now(),
    (nowMs) => nowMs > firstRunDeadlineMs,
    10_000,
    50,
  );
  const { dog } = watchdog();
  await waitUntil(
    "the dead man's switch",
    async () => {
      await dog.check();
      return dog.alerts.get(key) ?? null;
    },
    (alert) => alert !== null,
    60_000,
    200,
  );
  const alert = dog.alerts.get(key)!;
  // A run is recorded and has not completed (RUNNING, or still queued behind the sleeps).
  expect(["RUNNING", "ARMED", "SCHEDULED"]).toContain(alert.details.status);
  expect(alert.kind).toBe("dead_mans_switch");
  expect(alert.message).toMatch(/slow-job: .* has not completed within 1000 ms \([A-Z]+\)/);
});
