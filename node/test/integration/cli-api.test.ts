/**
 * The API commands of the built CLI (`node bin/chronofence.js tasks|workflows|tail ...`,
 * run as a child process, as a user runs it) against a real API fixture:
 * the id as the last line, `--json` as the API answers, exit codes, and
 * dev.json found without any flag. Needs `npm run build` (pretest does it).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChronofenceClient } from "../../src/client/client.js";
import { type ApiFixture, startApiFixture } from "./support/api.js";
import { withPg } from "./support/services.js";

const BIN = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../../bin/chronofence.js",
);
// Each run is a Node start; on a shared 2-core machine under load that can take seconds, and a
// test runs several (no property here depends on time).
const CHILD_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT = { timeout: 180_000 };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let fixture: ApiFixture;
let client: ChronofenceClient;
let home: string;

beforeAll(async () => {
  fixture = await startApiFixture();
  client = new ChronofenceClient({ url: fixture.api.baseUrl, apiKey: fixture.tenant.apiKey });
  home = await mkdtemp(path.join(tmpdir(), "cf-cli-"));
});

afterAll(async () => {
  for (const child of live) child.kill("SIGKILL");
  await fixture?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  lines: string[];
}

/** Runs the CLI with only the environment given (no CF_API_* inherited). */
function cli(args: string[], env: Record<string, string> = {}, cwd = home): Promise<Run> {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("CF_")),
  );
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...clean, ...env }, cwd, timeout: CHILD_TIMEOUT_MS },
      (error, stdout, stderr) => {
        const code = error ? ((error as { code?: number }).code ?? 1) : 0;
        resolve({ code, stdout, stderr, lines: stdout.trimEnd().split("\n") });
      },
    );
  });
}

const api = () => ({ CF_API_URL: fixture.api.baseUrl, CF_API_KEY: fixture.tenant.apiKey });

describe("chronofence tasks", TEST_TIMEOUT, () => {
  it("submit prints the id last; get --json prints the task exactly as the API answers it", async () => {
    const submitted = await cli(
      [
        "tasks",
        "submit",
        "--type",
        "cli.echo",
        "--payload",
        '{"n":12345678901234567890,"s":"é"}',
        "--delay-ms",
        "60000",
        "--priority",
        "bulk",
      ],
      api(),
    );
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.lines.at(-1)!;
    expect(id).toMatch(UUID);
    expect(submitted.stdout).toMatch(/status +SCHEDULED/);
    const got = await cli(["tasks", "get", id, "--json"], api());
    expect(got.code).toBe(0);
    const raw = await fetch(`${fixture.api.baseUrl}/v1/tasks/${id}`, {
      headers: { authorization: `Bearer ${fixture.tenant.apiKey}` },
    });
    expect(got.stdout).toBe(`${await raw.text()}\n`);
    expect(JSON.parse(got.stdout)).toMatchObject({ id, priority: "bulk", payload: { s: "é" } });
  });

  it("lists as a table, or as one JSON document", async () => {
    for (let i = 0; i < 3; i++) await client.tasks.submit({ type: "cli.list", payload: { i } });
    const human = await cli(["tasks", "list", "--type", "cli.list"], api());
    expect(human.lines[0]).toMatch(/^ID +TYPE +STATUS +ATTEMPT +RUN_AT +UPDATED_AT$/);
    expect(human.lines).toHaveLength(4);
    const json = await cli(
      ["tasks", "list", "--type", "cli.list", "--limit", "2", "--json"],
      api(),
    );
    expect(JSON.parse(json.stdout).tasks).toHaveLength(2);
    expect(json.stdout.trimEnd().split("\n")).toHaveLength(1);
  });

  it("cancels, then says conflict (exit 4); replays a DEAD task", async () => {
    const { id } = await client.tasks.submit({ type: "cli.cancel", delay_ms: 60_000 });
    expect((await cli(["tasks", "cancel", id], api())).lines.at(-1)).toBe(id);
    const again = await cli(["tasks", "cancel", id, "--json"], api());
    expect(again.code).toBe(4);
    expect(JSON.parse(again.stdout)).toMatchObject({
      status: 409,
      error: { code: "invalid_transition" },
    });
    expect(again.stderr).toMatch(/invalid_transition \(HTTP 409\)/);

    const dead = await client.tasks.submit({ type: "cli.dead", max_attempts: 1 });
    const token = await withPg(fixture.db.url, async (c) => {
      const armed = await c.query(
        `UPDATE tasks SET status = 'ARMED', fencing_token = nextval('fencing_token_seq'), armed_at = now(), updated_at = now()
          WHERE id = $1 RETURNING fencing_token::text AS token`,
        [dead.id],
      );
      return armed.rows[0].token as string;
    });
    await client.executions.start(dead.id, { fencing_token: token, worker_id: "w" });
    await client.executions.fail(dead.id, {
      fencing_token: token,
      worker_id: "w",
      error: { message: "x", retryable: false },
    });
    const replayed = await cli(["tasks", "replay", dead.id, "--json"], api());
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(JSON.parse(replayed.stdout).status).toBe("SCHEDULED");
  });

  it("exits with a code that says what failed", async () => {
    const unknown = "0190a000-0000-7000-8000-000000000000";
    const down = { CF_API_URL: "http://127.0.0.1:9", CF_API_KEY: "k" };
    // Independent runs, side by side: each is a Node start on a busy machine.
    const runs = await Promise.all([
      cli(["tasks", "get", unknown], api()),
      cli(["tasks", "get", unknown], { ...api(), CF_API_KEY: "cfk_wrong" }),
      cli(["tasks", "submit", "--type", "bad type"], api()),
      cli(["tasks", "submit", "--type", "x", "--payload", "{nope"], api()),
      cli(
        ["tasks", "submit", "--type", "x", "--delay-ms", "1", "--run-at", "2030-01-01T00:00:00Z"],
        api(),
      ),
      cli(["tasks", "get"], api()),
      cli(["tasks", "get", unknown], down),
      cli(["tasks", "get", unknown], {}),
    ]);
    expect(runs.map((r) => r.code)).toEqual([3, 7, 5, 2, 2, 2, 6, 2]);
    expect(runs[6]!.stderr).toMatch(/unreachable/);
    expect(runs[7]!.stderr).toMatch(/no API key/);
  });
});

describe("the dev.json of chronofence dev", TEST_TIMEOUT, () => {
  it("is found in ./.chronofence/ and in $CF_DATA_DIR, with no flag and no CF_API_*", async () => {
    const dev = JSON.stringify({
      api_url: fixture.api.baseUrl,
      api_key: fixture.tenant.apiKey,
      tenant: "dev",
    });
    const project = path.join(home, "project");
    await mkdir(path.join(project, ".chronofence"), { recursive: true });
    await writeFile(path.join(project, ".chronofence", "dev.json"), dev);
    const here = await cli(["tasks", "submit", "--type", "cli.dev"], {}, project);
    expect(here.code, here.stderr).toBe(0);
    expect(here.lines.at(-1)).toMatch(UUID);
    const data = path.join(home, "data");
    await mkdir(data, { recursive: true });
    await writeFile(path.join(data, "dev.json"), dev);
    expect((await cli(["tasks", "list", "--json"], { CF_DATA_DIR: data })).code).toBe(0);
    await writeFile(path.join(data, "dev.json"), "{broken");
    const broken = await cli(["tasks", "list"], { CF_DATA_DIR: data });
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/dev\.json is not JSON/);
  });
});

describe("chronofence workflows", TEST_TIMEOUT, () => {
  it("submits (id last), gets as JSON, cancels", async () => {
    const nodes = JSON.stringify([
      { key: "a", type: "cli.wf", delay_ms: 60_000 },
      { key: "b", type: "cli.wf", depends_on: ["a"] },
    ]);
    const submitted = await cli(["workflows", "submit", "--nodes", nodes], api());
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.lines.at(-1)!;
    expect(id).toMatch(UUID);
    expect(submitted.stdout).toMatch(/^b +\S+ +WAITING +all_success +a$/m);
    const got = await cli(["workflows", "get", id, "--json"], api());
    expect(JSON.parse(got.stdout)).toMatchObject({ id, node_count: 2, status: "RUNNING" });
    const cancelled = await cli(["workflows", "cancel", id, "--json"], api());
    expect(JSON.parse(cancelled.stdout).status).toBe("CANCELLED");
    expect((await cli(["workflows", "submit"], api())).code).toBe(2);
    const cycle = JSON.stringify([{ key: "a", type: "x", depends_on: ["a"] }]);
    expect((await cli(["workflows", "submit", "--nodes", cycle], api())).code).toBe(5);
  });

  it("lists the tenant's workflows, newest first, as a table or one JSON document", async () => {
    const tenant = await fixture.newTenant();
    const mine = { CF_API_URL: fixture.api.baseUrl, CF_API_KEY: tenant.apiKey };
    const own = new ChronofenceClient({ url: fixture.api.baseUrl, apiKey: tenant.apiKey });
    const ids: string[] = [];
    for (const type of ["cli.wf-a", "cli.wf-b", "cli.wf-c"]) {
      const nodes = [{ key: "only", type, delay_ms: 60_000 }];
      ids.push((await own.workflows.submit({ nodes })).id);
    }
    const [human, json, all, bad, refused] = await Promise.all([
      cli(["workflows", "list", "--limit", "2"], mine),
      cli(["workflows", "list", "--json"], mine),
      cli(["workflows", "list", "--limit", "0", "--json"], mine),
      cli(["workflows", "list", "--limit", "two"], mine),
      cli(["workflows", "list"], { ...mine, CF_API_KEY: "cfk_wrong" }),
    ]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.lines[0]).toMatch(/^ID +STATUS +NODES +PENDING +DEAD +CREATED_AT +FINISHED_AT$/);
    expect(human.lines.slice(1).map((l) => l.split(/ +/)[0])).toEqual([ids[2], ids[1]]);
    expect(human.lines[1]).toMatch(/^\S+ +RUNNING +1 +1 +0 +\S+ +-$/);
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout.trimEnd().split("\n")).toHaveLength(1);
    const listed = JSON.parse(json.stdout).workflows as Array<{ id: string; node_count: number }>;
    expect(listed.map((w) => w.id)).toEqual([...ids].reverse());
    expect(listed[0]).toMatchObject({ node_count: 1, status: "RUNNING" });
    expect(JSON.parse(all.stdout).workflows).toHaveLength(3);
    expect([bad.code, refused.code]).toEqual([2, 7]);
  });
});

const live = new Set<ChildProcess>();

describe("chronofence tail", TEST_TIMEOUT, () => {
  it("prints each state change of the tenant's tasks as it happens", async () => {
    const since = new Date().toISOString();
    const child = spawn(
      process.execPath,
      [
        BIN,
        "tail",
        "--json",
        "--type",
        "cli.tail",
        "--since",
        since,
        "--interval-ms",
        "100",
        "--count",
        "2",
      ],
      { env: { ...process.env, ...api() }, stdio: ["ignore", "pipe", "pipe"] },
    );
    live.add(child);
    const lines: string[] = [];
    let waiting: (() => void) | undefined;
    child.stdout!.on("data", (chunk: Buffer) => {
      lines.push(
        ...chunk
          .toString()
          .split("\n")
          .filter((l) => l !== ""),
      );
      waiting?.();
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    const printed = (n: number) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`tail printed ${lines.length} of ${n}`)),
          CHILD_TIMEOUT_MS,
        );
        waiting = () => {
          if (lines.length < n) return;
          clearTimeout(timer);
          resolve();
        };
        waiting();
      });
    const task = await client.tasks.submit({ type: "cli.tail", delay_ms: 60_000 });
    await printed(1);
    await client.tasks.cancel(task.id);
    await printed(2);
    expect(await exited).toBe(0);
    live.delete(child);
    expect(lines.map((l) => [JSON.parse(l).id, JSON.parse(l).status])).toEqual([
      [task.id, "SCHEDULED"],
      [task.id, "CANCELLED"],
    ]);
  });
});
