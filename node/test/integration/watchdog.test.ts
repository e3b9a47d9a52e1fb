/**
 * The watchdog against the real API over HTTP, with no dispatcher or worker:
 * nothing ever completes, so the canary alert must fire, and the dead man's
 * switch of a schedule whose occurrences never complete must trip. The whole
 * system (canaries completing, SIGSTOP/SIGCONT of the dispatcher, a running
 * handler slower than expect_within_ms): watchdog-e2e.test.ts.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { systemClock } from "../../src/adapters/clock/system-clock.js";
import { HttpWatchdogApi } from "../../src/adapters/http/watchdog-api.js";
import { CANARY_ALERT, Watchdog } from "../../src/app/watchdog/watchdog.js";
import { ChronofenceClient } from "../../src/client/client.js";
import type { Alert, AlertSink } from "../../src/ports/watchdog.js";
import { type ApiFixture, call, startApiFixture } from "./support/api.js";
import { waitUntil } from "./support/wait.js";

let fixture: ApiFixture;

beforeAll(async () => {
  fixture = await startApiFixture();
});
afterAll(async () => {
  await fixture?.stop();
});

it("alerts on a canary that never completes and on a schedule that never completes", async () => {
  const created = await call(fixture.api.baseUrl, "POST", "/v1/schedules", {
    key: fixture.tenant.apiKey,
    body: { name: "never-done", expression: "* * * * * *", type: "stuck", expect_within_ms: 500 },
  });
  expect(created.status).toBe(201);
  const fired: Alert[] = [];
  const sink: AlertSink = {
    fire: async (alert) => {
      fired.push(alert);
    },
    resolve: async () => undefined,
  };
  const client = new ChronofenceClient({
    url: fixture.api.baseUrl,
    apiKey: fixture.tenant.apiKey,
    timeoutMs: 5000,
  });
  const watchdog = new Watchdog(
    new HttpWatchdogApi(client),
    sink,
    systemClock,
    {
      canaryType: "chronofence.canary",
      canaryIntervalMs: 200,
      canaryDelayMs: 50,
      canaryDeadlineMs: 1000,
      historyLimit: 20,
      planAheadMs: 0,
    },
    (error) => {
      throw error;
    },
  );
  await waitUntil(
    "both alerts",
    async () => {
      await watchdog.check();
      return fired.map((a) => a.key).sort();
    },
    (keys) => keys.length === 2,
    15_000,
    100,
  );
  expect(fired.map((a) => a.key).sort()).toEqual([CANARY_ALERT, `schedule:${created.body.id}`]);
  const canary = fired.find((a) => a.key === CANARY_ALERT)!;
  const task = await call(fixture.api.baseUrl, "GET", `/v1/tasks/${canary.details.task_id}`, {
    key: fixture.tenant.apiKey,
  });
  expect(task.body).toMatchObject({ type: "chronofence.canary", priority: "critical" });
  expect(fired.find((a) => a.kind === "dead_mans_switch")!.message).toMatch(
    /never-done: .* has not completed within 500 ms \(no run recorded\)/,
  );
});
