/**
 * `chronofence dev` as a new user runs it: a child process in a temporary
 * directory, no DATABASE_URL, REDIS_URL or KAFKA_BROKERS. Every role runs in
 * it on the embedded default; the printed curl line submits an echo task
 * that completes at its time; after a kill -9 and a restart on the same data
 * directory, the same key opens the API and every task acknowledged before
 * the kill runs, once; a second dev on the same data directory or port
 * fails at once, naming it. With DATABASE_URL alone, that Postgres replaces
 * the embedded one and the rest stays in the process.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call } from "./support/api.js";
import { type DevChild, embeddedEnv, killDevChildren, spawnDev } from "./support/dev-child.js";
import { createTestDatabase, type TestDatabase, withPg } from "./support/services.js";

let dir: string;
let dataDir: string;
let runsFile: string;
let env: NodeJS.ProcessEnv;
let dev: DevChild;

/** A user handler module: `record` appends the task's id to a file each time it runs. */
const HANDLERS = `import { appendFileSync } from "node:fs";
export const handlers = {
  record: async (payload, ctx) => {
    appendFileSync(process.env.CF_TEST_RUNS_FILE, ctx.taskId + "\\n");
    return payload;
  },
};
`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "chronofence-dev-test-"));
  dataDir = join(dir, ".chronofence");
  runsFile = join(dir, "runs.txt");
  writeFileSync(join(dir, "handlers.mjs"), HANDLERS);
  writeFileSync(runsFile, "");
  env = embeddedEnv({
    CF_TEST_RUNS_FILE: runsFile,
    // An envelope lost with the process (ARMED at the kill) is re-armed within seconds here.
    CF_DISPATCH_TIMEOUT_MS: "3000",
    CF_RECONCILE_INTERVAL_MS: "1000",
  });
});

afterAll(async () => {
  killDevChildren();
  await rm(dir, { recursive: true, force: true });
});

const startDev = () => spawnDev(dir, ["--port", "0", "--handlers", "handlers.mjs"], env).ready;
const devFile = () => JSON.parse(readFileSync(join(dataDir, "dev.json"), "utf8"));
const portOf = (url: string) => Number(new URL(url).port);

/** The task as GET answers it; null while the API answers 503 (its Postgres busy: a loaded machine). */
async function taskOf(id: string, key: string) {
  const answer = await call(dev.apiUrl, "GET", `/v1/tasks/${id}`, { key });
  if (answer.status === 503) return null;
  expect(answer.status).toBe(200);
  return answer.body;
}

async function untilCompleted(ids: string[], key: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const tasks = await Promise.all(ids.map((id) => taskOf(id, key)));
    if (tasks.every((t) => t?.status === "COMPLETED")) return tasks;
    if (Date.now() > deadline)
      throw new Error(`not completed: ${JSON.stringify(tasks.map((t) => t && [t.id, t.status]))}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe("chronofence dev with no service variables", () => {
  it("prints the API URL, the data directory, a key (also in dev.json, 0600) and a curl line that runs an echo task at its time", async () => {
    dev = await startDev();
    const file = devFile();
    expect(file).toEqual({
      api_url: dev.apiUrl,
      api_key: expect.stringMatching(/^cfk_/),
      tenant: "dev",
    });
    expect(statSync(join(dataDir, "dev.json")).mode & 0o777).toBe(0o600);
    const out = dev.stdout();
    expect(out).toContain(`API:        ${dev.apiUrl}`);
    expect(out).toContain(`data dir:   ${dataDir}`);
    expect(out).toContain(file.api_key);
    // The printed curl line, pasted as it is.
    const curl = /^\s*(curl -XPOST .*)$/m.exec(out)![1]!;
    const created = JSON.parse(
      execFileSync("sh", ["-c", curl], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }),
    );
    expect(created).toMatchObject({ type: "echo", status: "SCHEDULED" });
    const [done] = await untilCompleted([created.id], file.api_key, 60_000);
    expect(done.result).toEqual({ hello: "world" });
    expect(done.attempt).toBe(1);
    expect(Date.parse(done.finished_at)).toBeGreaterThanOrEqual(Date.parse(done.run_at));
  }, 180_000);

  it("after kill -9 and a restart: the same key, and every task acknowledged before the kill runs, once", async () => {
    const { api_key: key } = devFile();
    const delays = [2000, 2500, 3000, 4000, 20_000, 25_000];
    const ids: string[] = [];
    for (const delay_ms of delays) {
      const res = await call(dev.apiUrl, "POST", "/v1/tasks", {
        key,
        body: { type: "record", payload: { delay_ms }, delay_ms },
      });
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
    dev.process.kill("SIGKILL");
    await dev.exited;

    dev = await startDev();
    expect(devFile().api_key).toBe(key);
    expect(dev.stdout()).toContain(key);
    const tasks = await untilCompleted(ids, key, 120_000);
    for (const task of tasks) {
      expect(task.attempt).toBe(1);
      expect(Date.parse(task.finished_at)).toBeGreaterThanOrEqual(Date.parse(task.run_at));
    }
    const runs = readFileSync(runsFile, "utf8").trim().split("\n");
    expect(runs.sort()).toEqual([...ids].sort());
  }, 240_000);

  it("refuses a second dev on the same data directory, or on the same port, at once and naming it", async () => {
    const port = portOf(dev.apiUrl);
    const sameDir = spawnDev(dir, ["--port", "0"], env);
    await expect(sameDir.ready).rejects.toThrow(
      new RegExp(`data directory ${dataDir} is in use by process ${dev.process.pid}`),
    );
    const other = await mkdtemp(join(tmpdir(), "chronofence-dev-test-other-"));
    try {
      const samePort = spawnDev(other, ["--port", String(port)], env);
      await expect(samePort.ready).rejects.toThrow(
        `cannot listen on 127.0.0.1:${port}: the port is already in use`,
      );
    } finally {
      await rm(other, { recursive: true, force: true });
    }
    // The first one is unharmed.
    expect((await call(dev.apiUrl, "GET", "/readyz")).status).toBe(200);
  }, 60_000);

  it("stops on SIGTERM with exit code 0 and frees the data directory", async () => {
    dev.process.kill("SIGTERM");
    expect(await dev.exited).toEqual({ code: 0, signal: null });
    expect(existsSync(join(dataDir, "dev.lock"))).toBe(false);
  }, 60_000);

  it("gives the tenant dev a new key when dev.json is gone", async () => {
    const old = devFile();
    rmSync(join(dataDir, "dev.json"));
    dev = await startDev();
    const fresh = devFile();
    expect(fresh.api_key).not.toBe(old.api_key);
    expect(dev.stdout()).toContain(fresh.api_key);
    // The same tenant: its earlier tasks are there under the new key.
    const list = await call(dev.apiUrl, "GET", "/v1/tasks?limit=100", { key: fresh.api_key });
    expect(list.status).toBe(200);
    expect(list.body.tasks.length).toBeGreaterThanOrEqual(7);
    dev.process.kill("SIGTERM");
    expect(await dev.exited).toEqual({ code: 0, signal: null });
  }, 180_000);
});

describe("chronofence dev with DATABASE_URL only", () => {
  let db: TestDatabase;
  afterAll(async () => {
    await db?.drop();
  });

  it("runs on that Postgres (migrated at start) with the in-process hot tier and transport", async () => {
    db = await createTestDatabase();
    const own = await mkdtemp(join(tmpdir(), "chronofence-dev-test-pg-"));
    try {
      const started = await spawnDev(own, ["--port", "0"], { ...env, DATABASE_URL: db.url }).ready;
      const out = started.stdout();
      expect(out).toContain("postgres:   from DATABASE_URL");
      expect(out).toContain("hot tier:   in this process");
      expect(out).toContain("transport:  in this process");
      expect(existsSync(join(own, ".chronofence", "pgdata"))).toBe(false);
      const { api_key: key } = JSON.parse(
        readFileSync(join(own, ".chronofence", "dev.json"), "utf8"),
      );
      const res = await call(started.apiUrl, "POST", "/v1/tasks", {
        key,
        body: { type: "echo", payload: { on: "postgres" }, delay_ms: 500 },
      });
      expect(res.status).toBe(201);
      await expect
        .poll(
          () =>
            withPg(db.url, async (c) => {
              const r = await c.query("SELECT status, result FROM tasks WHERE id = $1", [
                res.body.id,
              ]);
              return r.rows[0];
            }),
          { timeout: 60_000, interval: 200 },
        )
        .toEqual({ status: "COMPLETED", result: { on: "postgres" } });
      started.process.kill("SIGTERM");
      expect(await started.exited).toEqual({ code: 0, signal: null });
    } finally {
      await rm(own, { recursive: true, force: true });
    }
  }, 180_000);
});
