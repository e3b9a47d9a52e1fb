/**
 * Durable before acknowledged (docs/architecture.md, invariant 6): every 201 is in
 * Postgres, even when the server process dies — between a commit and its
 * answers (a seam kills it there), or at a random moment under load (SIGKILL).
 * The server runs as a real child process.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTenantFixture, type TestTenant } from "./support/api.js";
import { bundleApiChild, killChildren, startChild } from "./support/child.js";
import { deleteRedisKeys, TEST_REDIS_URL, type TestDatabase, withPg } from "./support/services.js";

let db: TestDatabase;
let tenant: TestTenant;
let bundle: Awaited<ReturnType<typeof bundleApiChild>>;
const prefix = `cf-test-durability-${process.pid}`;

beforeAll(async () => {
  ({ db, tenant } = await startTenantFixture());
  bundle = await bundleApiChild();
});

afterAll(async () => {
  killChildren();
  await bundle?.cleanup();
  await deleteRedisKeys(prefix);
  await db?.drop();
});

const childEnv = (extra: Record<string, string> = {}) => ({
  DATABASE_URL: db.url,
  REDIS_URL: TEST_REDIS_URL,
  CF_REDIS_PREFIX: prefix,
  PORT: "0",
  HOST: "127.0.0.1",
  CF_HORIZON_DAYS: "7",
  CF_RETENTION_DAYS: "2",
  LOG_LEVEL: "silent",
  ...extra,
});

const storedIds = (ids: string[]) =>
  withPg(db.url, async (c) =>
    (await c.query("SELECT id FROM tasks WHERE id = ANY($1::uuid[])", [ids])).rows.map(
      (r) => r.id as string,
    ),
  );
const countOfType = (type: string) =>
  withPg(
    db.url,
    async (c) =>
      (await c.query("SELECT count(*)::int AS n FROM tasks WHERE type = $1", [type])).rows[0].n,
  );

async function post(port: number, type: string): Promise<{ status: number; id?: string }> {
  const response = await fetch(`http://127.0.0.1:${port}/v1/tasks`, {
    method: "POST",
    headers: { authorization: `Bearer ${tenant.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ type }),
  });
  const body = (await response.json()) as { id?: string };
  return body.id === undefined
    ? { status: response.status }
    : { status: response.status, id: body.id };
}

describe("durability", () => {
  it("keeps a committed task when the server dies between commit and answer", async () => {
    const child = await startChild(bundle.file, childEnv({ CF_TEST_CRASH_AFTER_COMMIT: "3" }));
    const first = await post(child.port, "crash-window");
    const second = await post(child.port, "crash-window");
    expect([first.status, second.status]).toEqual([201, 201]);
    await expect(post(child.port, "crash-window")).rejects.toThrow();
    expect((await child.exited).signal).toBe("SIGKILL");
    expect(await storedIds([first.id!, second.id!])).toHaveLength(2);
    // The third was committed, never acknowledged: at-least-once keeps it.
    expect(await countOfType("crash-window")).toBe(3);
  });

  it("loses no acknowledged task when the server is SIGKILLed under load", async () => {
    const child = await startChild(bundle.file, childEnv());
    const acknowledged: string[] = [];
    let stop = false;
    const clients = Array.from({ length: 16 }, async () => {
      while (!stop) {
        const answer = await post(child.port, "under-load").catch(() => null);
        if (!answer) return;
        if (answer.status === 201) acknowledged.push(answer.id!);
      }
    });
    await expect.poll(() => acknowledged.length, { timeout: 20_000 }).toBeGreaterThanOrEqual(500);
    child.process.kill("SIGKILL");
    stop = true;
    await Promise.all(clients);
    await child.exited;
    const stored = await storedIds(acknowledged);
    expect(stored.length).toBe(acknowledged.length);
    expect(await countOfType("under-load")).toBeGreaterThanOrEqual(acknowledged.length);
  });

  it("answers in-flight requests 201 on SIGTERM, keeps their rows, and exits 0", async () => {
    // Commits are held until SIGTERM, so all 50 requests are surely in flight when it comes.
    const child = await startChild(
      bundle.file,
      childEnv({
        CF_TEST_HOLD_COMMITS: "1",
        CF_PG_POOL_SIZE: "64",
        CF_GROUP_COMMIT_MAX_IN_FLIGHT: "64",
      }),
    );
    const answers = Array.from({ length: 50 }, () => post(child.port, "sigterm"));
    await child.printed(/^HELD 50$/);
    child.process.kill("SIGTERM");
    const settled = await Promise.all(answers);
    expect((await child.exited).code).toBe(0);
    expect(settled.map((a) => a.status)).toEqual(Array(50).fill(201));
    const ids = settled.map((a) => a.id!);
    expect(new Set(ids).size).toBe(50);
    expect(await storedIds(ids)).toHaveLength(50);
    expect(await countOfType("sigterm")).toBe(50);
  });
});
