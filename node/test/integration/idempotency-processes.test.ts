/**
 * One logical task per idempotency key across API processes (docs/architecture.md,
 * invariant 4): two API processes (support/api-child.ts, real child processes
 * on one database) that receive the same key at once create one task; one
 * answers 201, the other 200 with the same task (or 409 if the bodies
 * differ). No process-local state can give that: the key's row in
 * idempotency_keys, claimed inside cf_insert_tasks, decides.
 *
 * "At once" is made certain with CF_TEST_HOLD_COMMITS: each process holds its
 * group commit until SIGTERM, so both requests are in flight, uncommitted,
 * when the test releases both commits together.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTenantFixture, type TestTenant } from "./support/api.js";
import { bundleApiChild, type Child, killChildren, startChild } from "./support/child.js";
import { deleteRedisKeys, TEST_REDIS_URL, type TestDatabase, withPg } from "./support/services.js";

let db: TestDatabase;
let tenant: TestTenant;
let bundle: Awaited<ReturnType<typeof bundleApiChild>>;
const prefix = `cf-test-idem-${process.pid}`;

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

const apiProcess = (extra: Record<string, string> = {}) =>
  startChild(bundle.file, {
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

async function post(child: Child, body: unknown): Promise<{ status: number; id: string | null }> {
  const response = await fetch(`http://127.0.0.1:${child.port}/v1/tasks`, {
    method: "POST",
    headers: { authorization: `Bearer ${tenant.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = (await response.json()) as { id?: string; error?: { details?: unknown } };
  return { status: response.status, id: answer.id ?? null };
}

/** The tasks and key rows stored for a key. */
const storedFor = (key: string) =>
  withPg(db.url, async (c) => {
    const tasks = await c.query("SELECT id FROM tasks WHERE idempotency_key = $1", [key]);
    const keys = await c.query("SELECT task_id FROM idempotency_keys WHERE idempotency_key = $1", [
      key,
    ]);
    return {
      tasks: tasks.rows.map((r) => r.id as string),
      keys: keys.rows.map((r) => r.task_id as string),
    };
  });

/** Two held processes, one request each; releases both commits together and returns the answers. */
async function racedPair(bodies: [unknown, unknown]) {
  const held = { CF_TEST_HOLD_COMMITS: "1" };
  const [p1, p2] = await Promise.all([apiProcess(held), apiProcess(held)]);
  const answers = [post(p1, bodies[0]), post(p2, bodies[1])];
  await Promise.all([p1.printed(/^HELD 1$/), p2.printed(/^HELD 1$/)]);
  p1.process.kill("SIGTERM");
  p2.process.kill("SIGTERM");
  const settled = await Promise.all(answers);
  expect((await p1.exited).code).toBe(0);
  expect((await p2.exited).code).toBe(0);
  return settled;
}

describe("one idempotency key, two API processes", () => {
  it("the same request, in flight in both at once, creates one task: 201 and 200 with its id", async () => {
    const body = { type: "idem", idempotency_key: "two-processes" };
    const answers = await racedPair([body, body]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 201]);
    expect(answers[0]!.id).toBe(answers[1]!.id);
    expect(await storedFor("two-processes")).toEqual({
      tasks: [answers[0]!.id],
      keys: [answers[0]!.id],
    });
  }, 60_000);

  it("another body under the same key: one task, and the loser answers 409", async () => {
    const answers = await racedPair([
      { type: "idem", idempotency_key: "two-bodies", payload: 1 },
      { type: "idem", idempotency_key: "two-bodies", payload: 2 },
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
    const created = answers.find((a) => a.status === 201)!.id;
    expect(await storedFor("two-bodies")).toEqual({ tasks: [created], keys: [created] });
  }, 60_000);

  it("a burst of 25 keys, each sent 4 times to each process: one task per key", async () => {
    const [p1, p2] = await Promise.all([apiProcess(), apiProcess()]);
    const keys = Array.from({ length: 25 }, (_, i) => `burst-${i}`);
    const answers = await Promise.all(
      keys.flatMap((key) =>
        [p1, p2, p1, p2, p1, p2, p1, p2].map(async (child) => ({
          key,
          ...(await post(child, { type: "idem-burst", idempotency_key: key })),
        })),
      ),
    );
    for (const key of keys) {
      const mine = answers.filter((a) => a.key === key);
      expect(
        mine.filter((a) => a.status === 201),
        key,
      ).toHaveLength(1);
      expect(
        mine.filter((a) => a.status === 200),
        key,
      ).toHaveLength(7);
      expect(new Set(mine.map((a) => a.id)).size, key).toBe(1);
      expect((await storedFor(key)).tasks).toEqual([mine[0]!.id]);
    }
    p1.process.kill("SIGTERM");
    p2.process.kill("SIGTERM");
    await Promise.all([p1.exited, p2.exited]);
  }, 60_000);
});
