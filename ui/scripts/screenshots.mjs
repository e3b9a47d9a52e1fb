/**
 * The dashboard's screenshots in docs/img, made on the embedded default:
 *
 *   npm run build && node ui/scripts/screenshots.mjs [--out docs/img] [--keep]
 *
 * Starts `chronofence dev` in a temporary data directory on a free port with
 * none of DATABASE_URL, REDIS_URL, KAFKA_BROKERS (PGlite, the in-process hot
 * tier and transport: what `npm start` runs), the handlers of
 * screenshot-handlers.mjs and an operator token; submits what a small
 * service's scheduler holds (tasks of several types and priorities, some due
 * later, a webhook that fails until its tasks are dead, two cron schedules,
 * a workflow that is running), then signs in with the key dev printed and
 * saves one 1280×800 PNG of each page with Debian's chromium. `--keep`
 * leaves the data directory (its path is printed).
 */
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { ChronofenceClient } from "../../dist/node/src/entries/client.js";
import { recompressPng } from "./png.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CHROMIUM = process.env.CF_CHROMIUM ?? "/usr/bin/chromium";
const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
];
const VIEWPORT = { width: 1280, height: 800 };
const ADMIN_TOKEN = "screenshots-operator-token";
const READY_TIMEOUT_MS = 600_000;
const WAIT_MS = 120_000;

const args = process.argv.slice(2);
const outDir = path.resolve(
  root,
  args.includes("--out") ? args[args.indexOf("--out") + 1] : "docs/img",
);
const keep = args.includes("--keep");

const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer().once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

/** `chronofence dev` on the embedded default; resolves with its URL once it printed `ready`. */
function startDev(dataDir, port) {
  // Plan a minute ahead, not ten: the schedule's page then shows past occurrences beside the
  // upcoming ones (its history is the latest planned, future ones included).
  const env = { ...process.env, CF_ADMIN_TOKEN: ADMIN_TOKEN, CF_CRON_PLAN_AHEAD_MS: "60000" };
  for (const name of ["DATABASE_URL", "REDIS_URL", "KAFKA_BROKERS"]) delete env[name];
  const child = spawn(
    process.execPath,
    [
      path.join(root, "bin/chronofence.js"),
      "dev",
      "--data-dir",
      dataDir,
      "--port",
      String(port),
      "--handlers",
      path.join(root, "ui/scripts/screenshot-handlers.mjs"),
    ],
    { env, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  child.stderr.on("data", (chunk) => {
    err += chunk;
  });
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`dev not ready in ${READY_TIMEOUT_MS} ms: ${err}`)),
      READY_TIMEOUT_MS,
    );
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const match = /^ready (\S+)$/m.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve({ url: match[1], printed: out });
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`chronofence dev exited (${code ?? signal}): ${err.slice(-2000)}`));
    });
  });
  return { child, ready };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what, check, timeoutMs = WAIT_MS) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

/** What a small service's scheduler holds; resolves with the ids the pages are shot on. */
async function submitScene(client) {
  const customers = ["ada", "grace", "linus", "margaret", "ken", "barbara", "dennis", "frances"];
  const batch = [];
  customers.forEach((name, i) => {
    batch.push({
      type: "email.send",
      priority: "critical",
      payload: { to: `${name}@example.com`, template: "receipt" },
    });
    batch.push({
      type: "invoice.render",
      payload: { invoice: `INV-2031-${100 + i}` },
      delay_ms: 200 * i,
    });
    if (i % 2 === 0)
      batch.push({
        type: "report.build",
        priority: "bulk",
        payload: { report: "daily-usage", day: i },
      });
  });
  // Due later: SCHEDULED on the tasks page, with the idempotency keys a caller sets.
  for (let i = 0; i < 5; i++) {
    batch.push({
      type: "email.send",
      priority: "standard",
      payload: { to: `trial-${i}@example.com`, template: "trial-ends" },
      delay_ms: 3_600_000 * (i + 1),
      idempotency_key: `trial-ends-${i}`,
    });
  }
  await client.tasks.submitBatch(batch);

  // A webhook endpoint that is down: three attempts each, then dead.
  const backoff = { strategy: "exponential", base_ms: 400, max_ms: 2000 };
  const dead = [];
  for (const [i, url] of [
    "https://hooks.example.com/orders",
    "https://crm.example.net/events",
    "https://hooks.example.com/refunds",
  ].entries()) {
    const task = await client.tasks.submit({
      type: "webhook.deliver",
      priority: i === 0 ? "critical" : "standard",
      payload: { url, event: "order.paid", order: 4711 + i },
      max_attempts: 3,
      backoff,
    });
    dead.push(task.id);
  }

  const every20s = await client.schedules.create({
    name: "sync-exchange-rates",
    expression: "*/20 * * * * *",
    time_zone: "Europe/Berlin",
    type: "etl.step",
    payload: { step: "exchange-rates", ms: 80 },
    expect_within_ms: 60_000,
  });
  await client.schedules.create({
    name: "weekday-digest",
    expression: "0 9 * * 1-5",
    time_zone: "America/New_York",
    type: "email.send",
    payload: { template: "digest" },
    paused: true,
  });

  // extract → three transforms → join → load (long) → notify: it runs while the pages are shot.
  const step = (key, ms, depends_on = []) => ({
    key,
    type: "etl.step",
    payload: { step: key, ms },
    depends_on,
  });
  const workflow = await client.workflows.submit({
    nodes: [
      step("extract", 300),
      step("clean-orders", 400, ["extract"]),
      step("clean-customers", 600, ["extract"]),
      step("fx-convert", 500, ["extract"]),
      step("join", 300, ["clean-orders", "clean-customers", "fx-convert"]),
      { ...step("load-warehouse", 600_000, ["join"]), timeout_ms: 900_000 },
      step("refresh-dashboards", 200, ["load-warehouse"]),
      { ...step("notify-finance", 100, ["load-warehouse"]), type: "email.send" },
    ],
  });
  const finished = await client.workflows.submit({
    nodes: [step("fetch", 100), step("index", 150, ["fetch"]), step("publish", 100, ["index"])],
  });
  return { dead, schedule: every20s.id, workflow: workflow.id, finished: finished.id };
}

async function waitForScene(client, scene) {
  await until("the webhooks to die", async () => {
    const tasks = await Promise.all(scene.dead.map((id) => client.tasks.get(id)));
    return tasks.every((t) => t.status === "DEAD");
  });
  await until("the workflow to reach load-warehouse", async () => {
    const w = await client.workflows.get(scene.workflow);
    return w.nodes.find((n) => n.key === "load-warehouse")?.status === "RUNNING";
  });
  await until("two occurrences of the schedule", async () => {
    const s = await client.schedules.get(scene.schedule, { history: 50 });
    return s.history.filter((o) => o.status === "COMPLETED").length >= 2;
  });
  // Replay one dead webhook: its task page then shows retried, dead and the new attempt.
  await client.tasks.replay(scene.dead[1]);
  await until(
    "the replayed webhook to die again",
    async () => (await client.tasks.get(scene.dead[1])).status === "DEAD",
  );
  // More work after a pause, so the overview's charts have more than one bucket.
  await sleep(10_000);
  await client.tasks.submitBatch(
    Array.from({ length: 24 }, (_, i) => ({
      type: i % 3 === 0 ? "invoice.render" : "email.send",
      payload: { n: i },
      delay_ms: 150 * i,
    })),
  );
  await sleep(6_000);
}

async function shoot(page, name) {
  await sleep(400); // a poll's answer drawn, the charts' canvas painted
  const file = path.join(outDir, `${name}.png`);
  const png = await page.screenshot({ type: "png" });
  const small = recompressPng(png);
  await writeFile(file, small);
  console.log(`${path.relative(root, file)}  ${(small.length / 1024).toFixed(1)} KB`);
}

async function shootPages(url, apiKey, scene) {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
  });
  try {
    const context = await browser.newContext({ viewport: VIEWPORT, timezoneId: "Europe/Berlin" });
    const page = await context.newPage();
    page.setDefaultTimeout(WAIT_MS);
    await page.goto(`${url}/ui/`);
    await page.fill("input[name=api-key]", apiKey);
    await page.click("button[type=submit]");
    await page.waitForSelector("header nav");

    await page.waitForSelector("[data-card]");
    await page.waitForFunction(() => document.querySelectorAll("canvas").length > 0);
    await shoot(page, "overview");

    await page.click("nav >> text=Tasks");
    await page.waitForSelector("[data-table=tasks] tbody tr");
    await shoot(page, "tasks");

    await page.goto(`${url}/ui/tasks/${scene.dead[1]}`);
    await page.waitForSelector("[data-table=attempts]");
    await shoot(page, "task");

    await page.click("nav >> text=Dead letters");
    await page.waitForSelector("[data-dead-letter], [data-table=dead-letters] tbody tr");
    await shoot(page, "dead-letters");

    await page.goto(`${url}/ui/schedules/${scene.schedule}`);
    await page.waitForSelector("text=sync-exchange-rates");
    await page.waitForFunction(() => /COMPLETED/.test(document.body.textContent));
    await shoot(page, "schedule");

    await page.goto(`${url}/ui/workflows/${scene.workflow}`);
    await page.waitForFunction(() => document.querySelectorAll("canvas").length > 0);
    await shoot(page, "workflow");

    await page.click("nav >> text=Cluster");
    await page.fill("input[name=admin-token]", ADMIN_TOKEN);
    await page.click("button[type=submit]");
    await page.waitForSelector("[data-table=nodes] tbody tr");
    await page.waitForSelector("[data-shard]");
    await shoot(page, "cluster");
  } finally {
    await browser.close();
  }
}

async function main() {
  const work = await mkdtemp(path.join(tmpdir(), "cf-screenshots-"));
  const dataDir = path.join(work, "data");
  const dev = startDev(dataDir, await freePort());
  try {
    const { url, printed } = await dev.ready;
    console.log(printed.trimEnd());
    const { api_key: apiKey } = JSON.parse(await readFile(path.join(dataDir, "dev.json"), "utf8"));
    const client = new ChronofenceClient({ url, apiKey });
    const scene = await submitScene(client);
    await waitForScene(client, scene);
    await shootPages(url, apiKey, scene);
  } finally {
    if (dev.child.exitCode === null && dev.child.signalCode === null) {
      const exited = new Promise((resolve) => dev.child.once("exit", resolve));
      dev.child.kill("SIGTERM");
      await exited;
    }
    if (keep) console.log(`data directory kept: ${dataDir}`);
    else await rm(work, { recursive: true, force: true });
  }
}

await main();
