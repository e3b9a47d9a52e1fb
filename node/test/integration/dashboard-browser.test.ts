/**
 * The dashboard in a real browser (Debian's chromium through playwright-core)
 * against the real pipeline in this process: the API serving /ui, the
 * dispatch roles and a worker, on the shared Postgres, Redis and Kafka. What
 * a person does: sign in (a wrong key is refused), watch a task submitted
 * through the API appear and complete on the tasks page without a reload,
 * see a failing task die and replay it with the button, pause a schedule,
 * watch a running workflow's node states change, open the cluster page with
 * the operator token; and tenant B sees none of tenant A's tasks. Each test
 * saves a screenshot under .screenshots/ (git-ignored). No page may request
 * anything from anywhere but the API (the dashboard works offline).
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { call, newTenant, submitTask, type TestTenant } from "./support/api.js";
import { screenshot, signIn, startBrowser, type TestBrowser } from "./support/browser.js";
import { requireKafka } from "./support/kafka.js";
import { type Pipeline, startPipeline } from "./support/pipeline.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

const ADMIN_TOKEN = "dashboard-browser-operator-token";
const WAIT_MS = 60_000;

let pipeline: Pipeline;
let browser: TestBrowser;
let a: TestTenant;
let base: string;
/** Tasks of type `flaky` fail while their id is in here. */
const failing = new Set<string>();
/** Tasks of type `gate` wait until their payload's gate is opened. */
const gates = new Map<string, () => void>();
const gateOpened = new Map<string, Promise<void>>();
const gate = (name: string) => {
  if (!gateOpened.has(name))
    gateOpened.set(name, new Promise<void>((resolve) => gates.set(name, resolve)));
  return gateOpened.get(name)!;
};

beforeAll(async () => {
  await requireKafka();
  pipeline = await startPipeline(
    "dashboard",
    { adminToken: ADMIN_TOKEN, nodeReportIntervalMs: 500 },
    {
      worker: {
        register: (registry) =>
          registry
            .register("ok", async (payload) => ({ echoed: payload }))
            .register("flaky", async (_payload, ctx) => {
              if (failing.has(ctx.taskId))
                throw new Error(`flaky failed on attempt ${ctx.attempt}`);
              return { attempt: ctx.attempt };
            })
            .register("gate", async (payload) => {
              await gate((payload as { gate: string }).gate);
              return { opened: true };
            }),
      },
    },
  );
  a = pipeline.tenant;
  base = pipeline.api.baseUrl;
  browser = await startBrowser(base);
});

afterAll(async () => {
  for (const open of gates.values()) open();
  await browser?.close();
  await pipeline?.stop();
});

/** Marks the page's window: the mark is gone if the page was reloaded or left. */
const markWindow = (page: Page) => page.evaluate(() => Object.assign(window, { cfMark: 42 }));
const stillMarked = (page: Page) =>
  page.evaluate(() => (window as unknown as { cfMark?: number }).cfMark === 42);

describe("sign-in", () => {
  it("refuses a wrong key and keeps nothing", async () => {
    const page = await browser.page();
    await page.goto(`${base}/ui/`);
    await page.fill("input[name=api-key]", "cfk_not-a-real-key");
    await page.click("button[type=submit]");
    await expect
      .poll(() => page.textContent("[role=alert]"), { timeout: WAIT_MS })
      .toContain("refused");
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(await page.isVisible("header nav")).toBe(false);
    await screenshot(page, "sign-in-refused");
  });
});

describe("tasks", () => {
  it("shows a task submitted through the API appear and complete, without a reload", async () => {
    const page = await browser.page();
    await signIn(page, base, a.apiKey);
    await page.click("nav >> text=Tasks");
    await page
      .locator("[data-table=tasks]")
      .or(page.getByText("No task matches."))
      .first()
      .waitFor();
    await markWindow(page);
    const id = await submitTask(base, a.apiKey, { type: "ok", payload: { n: 1 }, delay_ms: 1500 });
    const row = page.locator(`[data-task="${id}"]`);
    await row.waitFor({ timeout: WAIT_MS });
    expect(["SCHEDULED", "ARMED", "RUNNING", "COMPLETED"]).toContain(
      await row.getAttribute("data-status"),
    );
    await expect
      .poll(() => row.getAttribute("data-status"), { timeout: WAIT_MS })
      .toBe("COMPLETED");
    expect(await stillMarked(page)).toBe(true);
    await screenshot(page, "tasks-completed");

    // Its page: the timeline from created to finished, and the attempt with its token and result.
    await row.locator("a").first().click();
    await page.waitForSelector("[data-table=attempts]");
    const stages = await page.locator("[data-table=timeline] tbody tr").count();
    expect(stages).toBe(5);
    const published = await page.textContent("[data-stage=published] td:nth-child(2)");
    expect(published).toMatch(/\d{4}-\d{2}-\d{2}/);
    const attempt = page.locator("[data-attempt='1']");
    expect(await attempt.getAttribute("data-outcome")).toBe("completed");
    expect(await attempt.textContent()).toContain("echoed");
    await screenshot(page, "task-page");
  });

  it("tenant B sees none of tenant A's tasks", async () => {
    const id = await submitTask(base, a.apiKey, { type: "ok", delay_ms: 600_000 });
    const b = await newTenant(pipeline.config);
    const page = await browser.page();
    await signIn(page, base, b.apiKey);
    await page.goto(`${base}/ui/tasks`);
    await page.waitForSelector("text=No task matches.");
    expect(await page.locator("[data-task]").count()).toBe(0);
    await page.fill("input[name=find]", id);
    await page.press("input[name=find]", "Enter");
    await page.waitForSelector("text=No task matches.");
    expect(page.url()).toContain(`find=${id}`);
    await page.goto(`${base}/ui/tasks/${id}`);
    await expect
      .poll(() => page.textContent("[role=alert]"), { timeout: WAIT_MS })
      .toContain("404");
    await page.goto(`${base}/ui/`);
    await page.waitForSelector("[data-table=counts]");
    expect(await page.locator("[data-table=counts] tbody tr").count()).toBe(0);
    await screenshot(page, "tenant-b-sees-nothing");
    // A's own view has it.
    const own = await call(base, "GET", `/v1/tasks/search?id=${id}`, { key: a.apiKey });
    expect(own.body.tasks).toHaveLength(1);
  });
});

describe("dead letters", () => {
  it("shows a task that failed until it died, and replays it with the button", async () => {
    const id = await submitTask(base, a.apiKey, {
      type: "flaky",
      max_attempts: 2,
      backoff: { strategy: "fixed", base_ms: 200, max_ms: 200 },
    });
    failing.add(id);
    const page = await browser.page();
    await signIn(page, base, a.apiKey);
    await page.goto(`${base}/ui/dead-letters`);
    const row = page.locator(`[data-task="${id}"]`);
    await row.waitFor({ timeout: WAIT_MS });
    expect(await row.textContent()).toContain("flaky failed on attempt 2");
    expect(await row.textContent()).toContain("exhausted");
    await screenshot(page, "dead-letters");

    failing.delete(id);
    await row.locator("[data-action=replay]").click();
    await row.waitFor({ state: "detached", timeout: WAIT_MS });
    await page.goto(`${base}/ui/tasks/${id}`);
    await expect
      .poll(() => page.getAttribute("[data-attempt='3']", "data-outcome").catch(() => null), {
        timeout: WAIT_MS,
      })
      .toBe("completed");
    const outcomes = await page
      .locator("[data-table=attempts] tbody tr")
      .evaluateAll((rows) => rows.map((r) => r.getAttribute("data-outcome")));
    expect(outcomes).toEqual(["retried", "dead", "completed"]);
    await screenshot(page, "task-replayed");
  });
});

describe("schedules", () => {
  it("shows the next five fire instants in the schedule's zone, and pauses it", async () => {
    const created = await call(base, "POST", "/v1/schedules", {
      key: a.apiKey,
      body: {
        name: `reports ${Date.now()}`,
        expression: "0 9 * * MON-FRI",
        time_zone: "America/New_York",
        type: "ok",
        expect_within_ms: 3_600_000,
      },
    });
    expect(created.status).toBe(201);
    const page = await browser.page();
    await signIn(page, base, a.apiKey);
    await page.goto(`${base}/ui/schedules`);
    await page.click(`[data-schedule="${created.body.id}"] a`);
    await page.waitForSelector("[data-table=next] tbody tr");
    const local = await page.locator("[data-table=next] tbody tr td:first-child").allTextContents();
    expect(local).toHaveLength(5);
    for (const text of local) expect(text).toMatch(/ 09:00:00-0[45]:00$/);
    expect(await page.getAttribute("[data-switch]", "data-switch")).toBe("ok");
    await page.click("[data-action=pause]");
    await page.waitForSelector("[data-action=resume]", { timeout: WAIT_MS });
    const after = await call(base, "GET", `/v1/schedules/${created.body.id}`, { key: a.apiKey });
    expect(after.body.paused).toBe(true);
    await expect
      .poll(() => page.getAttribute("[data-switch]", "data-switch"), { timeout: WAIT_MS })
      .toBe("paused");
    await screenshot(page, "schedule-paused");
  });
});

describe("workflows", () => {
  it("draws a running workflow and shows its node states change", async () => {
    const name = `wf-${Date.now()}`;
    const created = await call(base, "POST", "/v1/workflows", {
      key: a.apiKey,
      body: {
        nodes: [
          { key: "extract", type: "gate", payload: { gate: name } },
          { key: "transform", type: "ok", depends_on: ["extract"] },
          { key: "load", type: "ok", depends_on: ["transform"] },
          { key: "report", type: "ok", depends_on: ["transform"] },
        ],
      },
    });
    expect(created.status).toBe(201);
    const page = await browser.page();
    await signIn(page, base, a.apiKey);
    await page.goto(`${base}/ui/workflows`);
    await page.click(`[data-workflow="${created.body.id}"] a`);
    await page.waitForSelector("canvas.dag-canvas");
    await markWindow(page);
    const status = (key: string) => page.getAttribute(`[data-node="${key}"]`, "data-status");
    await expect.poll(() => status("extract"), { timeout: WAIT_MS }).toBe("RUNNING");
    expect(await status("load")).toBe("WAITING");
    await screenshot(page, "workflow-running");
    gates.get(name)!(); // the handler of extract is running: it made the gate
    for (const key of ["extract", "transform", "load", "report"])
      await expect.poll(() => status(key), { timeout: WAIT_MS }).toBe("COMPLETED");
    await expect
      .poll(() => page.textContent("[data-legend] [data-state=COMPLETED] b"), { timeout: WAIT_MS })
      .toBe("4");
    expect(await stillMarked(page)).toBe(true);
    await screenshot(page, "workflow-completed");
  });
});

describe("a 10,000-node workflow", () => {
  it("renders: wide levels collapsed, a few dozen node rows in the DOM, every level on expand", async () => {
    const middles = Array.from({ length: 9998 }, (_, i) => `m${i}`);
    const created = await call(base, "POST", "/v1/workflows", {
      key: a.apiKey,
      body: {
        nodes: [
          { key: "root", type: "ok", delay_ms: 3_600_000 },
          ...middles.map((key) => ({ key, type: "ok", depends_on: ["root"] })),
          { key: "sink", type: "ok", depends_on: middles },
        ],
      },
    });
    expect(created.status).toBe(201);
    const page = await browser.page();
    await signIn(page, base, a.apiKey);
    const startedMs = Date.now();
    await page.goto(`${base}/ui/workflows/${created.body.id}`);
    const legend = (state: string) => page.textContent(`[data-legend] [data-state=${state}] b`);
    await expect.poll(() => legend("WAITING"), { timeout: WAIT_MS }).toBe("9,999");
    expect(await legend("SCHEDULED")).toBe("1");
    const renderedMs = Date.now() - startedMs;
    /** Pixels of the canvas that are not background: something was drawn. */
    const inked = () =>
      page.evaluate(() => {
        const canvas = document.querySelector("canvas.dag-canvas") as HTMLCanvasElement;
        const data = canvas.getContext("2d")!.getImageData(0, 0, canvas.width, canvas.height).data;
        let n = 0;
        for (let i = 3; i < data.length; i += 4) if (data[i]! > 0) n++;
        return n;
      });
    await expect.poll(inked, { timeout: WAIT_MS }).toBeGreaterThan(1000);
    expect(await page.locator("[data-node]").count()).toBeLessThan(60);
    await screenshot(page, "workflow-10000-collapsed");
    const expandMs = Date.now();
    await page.click("text=Expand every level");
    await expect.poll(inked, { timeout: WAIT_MS }).toBeGreaterThan(1000);
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(resolve)));
    console.log(
      `10,000-node workflow: legend after ${renderedMs} ms, expanded in ${Date.now() - expandMs} ms`,
    );
    await screenshot(page, "workflow-10000-expanded");
    await call(base, "DELETE", `/v1/workflows/${created.body.id}`, { key: a.apiKey });
  });
});

describe("overview and cluster", () => {
  it("shows the tenant's rates and counts, and the cluster only with the operator token", async () => {
    const page = await browser.page();
    await signIn(page, base, a.apiKey);
    await page.waitForSelector("[data-card=completed]");
    // Tasks completed above are reported by the worker node within its report interval.
    await expect
      .poll(() => page.textContent("[data-table=counts]"), { timeout: WAIT_MS })
      .toContain("COMPLETED");
    await expect
      .poll(() => page.textContent("[data-card=start]"), { timeout: WAIT_MS })
      .toMatch(/\d+(\.\d+)? (ms|s) \//);
    await screenshot(page, "overview");

    await page.click("nav >> text=Cluster");
    await page.waitForSelector("input[name=admin-token]");
    expect(await page.locator("[data-table=shards]").count()).toBe(0);
    await page.fill("input[name=admin-token]", "not-the-token-at-all");
    await page.click("form.token-form button[type=submit]");
    await expect
      .poll(() => page.textContent("[role=alert]"), { timeout: WAIT_MS })
      .toContain("CF_ADMIN_TOKEN");
    await page.fill("input[name=admin-token]", ADMIN_TOKEN);
    await page.click("form.token-form button[type=submit]");
    await page.waitForSelector("[data-table=shards]");
    expect(await page.locator("[data-shard]").count()).toBe(16);
    await expect
      .poll(() => page.locator(".shard:not(.expired)").count(), { timeout: WAIT_MS })
      .toBe(16);
    const nodes = await page.textContent("[data-table=nodes]");
    expect(nodes).toContain("dispatcher, preloader, reconciler");
    expect(nodes).toContain("worker");
    await page.waitForSelector("[data-table=lag]");
    await screenshot(page, "cluster");
  });

  it("asked nothing of any other origin", () => {
    expect(browser.offOrigin).toEqual([]);
  });
});
