/**
 * `chronofence watchdog` as its own process (the composition root
 * main/watchdog.ts), with its real alert sinks: the error log line, the
 * `cf_watchdog_alert` gauge on its /metrics, and a webhook (a local server).
 * The API runs in the test process with no dispatcher or worker at first, so
 * the watchdog's canaries never complete and the canary alert must reach all
 * three sinks; then the dispatch roles and a worker start, a canary
 * completes in time, and the resolution must reach all three. SIGTERM stops
 * the process cleanly.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { systemClock } from "../../src/adapters/clock/system-clock.js";
import { type RunningRoles, startDispatchRoles } from "../../src/main/dispatch.js";
import { type RunningWorker, startWorker } from "../../src/main/worker.js";
import { type ApiFixture, startApiFixture } from "./support/api.js";
import { newTopicPrefix, requireKafka } from "./support/kafka.js";
import { PIPELINE_TIMINGS } from "./support/pipeline.js";
import { cliArgs, killRolesChildren, scrape, spawnCliChild } from "./support/roles-child.js";

/**
 * The watchdog's windows, shortened: a canary not COMPLETED 5 s after submission alerts
 * (several times what a canary takes on a loaded machine, so once tasks run it clears).
 */
const CANARY_DEADLINE_MS = 5000;
/** Also sets the watchdog's API client timeout (twice this), which must suit a loaded machine. */
const CHECK_INTERVAL_MS = 1000;

interface WebhookPost {
  key: string;
  kind: string;
  state: string;
  message: string;
  details: { task_id: string | null; age_ms: number };
}

let fixture: ApiFixture;
let webhook: http.Server;
let webhookUrl: string;
const posts: WebhookPost[] = [];
let roles: RunningRoles | undefined;
let worker: RunningWorker | undefined;

beforeAll(async () => {
  await requireKafka();
  fixture = await startApiFixture({
    topicPrefix: newTopicPrefix("watchdog-process"),
    ...PIPELINE_TIMINGS,
  });
  webhook = http.createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on("end", () => {
      posts.push(JSON.parse(body));
      response.end();
    });
  });
  await new Promise<void>((resolve) => webhook.listen(0, "127.0.0.1", resolve));
  webhookUrl = `http://127.0.0.1:${(webhook.address() as AddressInfo).port}/alerts`;
});

afterAll(async () => {
  killRolesChildren();
  await worker?.stop();
  await roles?.stop();
  await fixture?.stop();
  await new Promise((resolve) => webhook?.close(resolve));
});

it("fires and resolves the canary alert through its log, gauge and webhook; SIGTERM exits 0", async () => {
  const watchdog = spawnCliChild(
    cliArgs("watchdog"),
    {
      CF_API_URL: fixture.api.baseUrl,
      CF_API_KEY: fixture.tenant.apiKey,
      CF_WATCHDOG_CANARY_INTERVAL_MS: "300",
      CF_WATCHDOG_CANARY_DELAY_MS: "50",
      CF_WATCHDOG_CANARY_DEADLINE_MS: String(CANARY_DEADLINE_MS),
      CF_WATCHDOG_CHECK_INTERVAL_MS: String(CHECK_INTERVAL_MS),
      CF_WATCHDOG_WEBHOOK_URL: webhookUrl,
      CF_METRICS_HOST: "127.0.0.1",
      CF_METRICS_PORT: "0",
      LOG_LEVEL: "info",
    },
    { logs: true },
  );
  const ready = await watchdog.printed(/^ready watchdog metrics_port=(\d+)$/);
  const metricsPort = Number(ready[1]);
  const gauge = () => scrape(metricsPort, "cf_watchdog_alert", 'alert="canary",kind="canary"');
  const logged = (message: RegExp) =>
    watchdog
      .logs()
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { level: number; alert?: string; msg: string })
      .filter((entry) => entry.alert === "canary" && message.test(entry.msg));

  // Before anything is overdue the gauge exists at 0.
  expect(await gauge()).toBe(0);

  // Nothing executes tasks: the first canary misses its deadline.
  await expect
    .poll(() => posts.filter((p) => p.state === "firing"), { timeout: 60_000, interval: 100 })
    .toHaveLength(1);
  const firing = posts.find((p) => p.state === "firing")!;
  expect(firing).toMatchObject({
    key: "canary",
    kind: "canary",
    message: `canary task not COMPLETED within ${CANARY_DEADLINE_MS} ms`,
  });
  // Never before a canary's deadline (a submission the loaded API did not answer in time
  // counts as a canary that never completes: task_id null).
  expect(firing.details.age_ms).toBeGreaterThanOrEqual(CANARY_DEADLINE_MS);
  expect(await gauge()).toBe(1);
  // pino's level 50 is error.
  await expect
    .poll(() => logged(/^canary task not COMPLETED/), { timeout: 10_000 })
    .toEqual([expect.objectContaining({ level: 50 })]);

  // Start executing: the next canary completes in time and the alert resolves everywhere.
  const logger = pino({ level: process.env.CF_TEST_LOG_LEVEL ?? "silent" });
  roles = await startDispatchRoles(
    fixture.config,
    systemClock,
    logger,
    new Set(["dispatcher", "preloader", "reconciler"]),
  );
  worker = await startWorker(fixture.config, systemClock, logger);
  await expect
    .poll(() => posts.filter((p) => p.state === "resolved"), { timeout: 120_000, interval: 100 })
    .toHaveLength(1);
  expect(posts.find((p) => p.state === "resolved")).toMatchObject({
    key: "canary",
    kind: "canary",
  });
  expect(await gauge()).toBe(0);
  await expect
    .poll(() => logged(/^resolved: canary task/), { timeout: 10_000 })
    .toEqual([expect.objectContaining({ level: 30 })]);
  // Each transition once: a firing alert is not sent again at every check (should the
  // loaded machine make a later canary late, it fires anew only after it resolved).
  const states = posts.map((p) => p.state);
  expect(states.slice(0, 2)).toEqual(["firing", "resolved"]);
  expect(states.filter((state, i) => state === states[i - 1])).toEqual([]);

  watchdog.process.kill("SIGTERM");
  expect(await watchdog.exited).toEqual({ code: 0, signal: null });
}, 240_000);
