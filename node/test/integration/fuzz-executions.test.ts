/**
 * Hostile calls to the worker protocol, POST /v1/executions/{id}/start|
 * heartbeat|complete|fail|interrupt: wrong and stale fencing tokens, tokens
 * that overflow a bigint, malformed bodies, keys without the `execute`
 * scope, other tenants' and made-up task ids. Each must be refused with a
 * 4xx and an error code, and none may change a task: the three tasks here
 * (one ARMED, one RUNNING, one COMPLETED, armed as a dispatcher would: a
 * fresh token from fencing_token_seq) read back exactly as before, and the
 * running one is then completed with its real token. The harness
 * (support/fuzz.ts) seeds the cases from CF_PROPERTY_SEED and prints the
 * command that replays a failing one:
 *
 *   CF_PROPERTY_SEED=<seed> CF_FUZZ_CASE=<index> npx vitest run node/test/integration/fuzz-executions.test.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/adapters/clock/system-clock.js";
import { createKey } from "../../src/main/admin.js";
import { type ApiFixture, call, startApiFixture, type TestTenant } from "./support/api.js";
import { type FuzzCase, failureMessage, type Rng, runFuzz, storedRows } from "./support/fuzz.js";

const FILE = "node/test/integration/fuzz-executions.test.ts";
const MAX_BODY_BYTES = 16 * 1024;

let fixture: ApiFixture;
let other: TestTenant;
/** Keys of the tenant without the execute scope. */
let readOnlyKey: string;
let submitOnlyKey: string;

interface Subject {
  id: string;
  token: string;
  runAt: string;
}
let armed: Subject;
let running: Subject;
let completed: Subject;
let othersTask: Subject;

beforeAll(async () => {
  fixture = await startApiFixture(
    { maxSingleBodyBytes: MAX_BODY_BYTES, requestTimeoutMs: 5000 },
    { maxPayloadBytes: 1024, ratePerS: 1e9, burst: 1e9 },
  );
  other = await fixture.newTenant();
  const name = await fixture.withDb(
    async (db) =>
      (await db.query("SELECT name FROM tenants WHERE id = $1", [fixture.tenant.id])).rows[0].name,
  );
  readOnlyKey = (await createKey(fixture.config, systemClock, name, ["read"]))!.apiKey;
  submitOnlyKey = (await createKey(fixture.config, systemClock, name, ["submit"]))!.apiKey;
  armed = await armedTask(fixture.tenant.apiKey);
  running = await armedTask(fixture.tenant.apiKey);
  expect((await exec(running, "start", { worker_id: "w-real" })).status).toBe(200);
  completed = await armedTask(fixture.tenant.apiKey);
  expect((await exec(completed, "start", { worker_id: "w-real" })).status).toBe(200);
  expect((await exec(completed, "complete", { result: { ok: true } })).status).toBe(200);
  othersTask = await armedTask(other.apiKey);
});

afterAll(async () => {
  await fixture?.stop();
});

/** Submits a task and arms it as a dispatcher would: ARMED, with a fresh fencing token. */
async function armedTask(apiKey: string): Promise<Subject> {
  const created = await call(fixture.api.baseUrl, "POST", "/v1/tasks", {
    key: apiKey,
    body: { type: "exec.fuzz", delay_ms: 0 },
  });
  expect(created.status).toBe(201);
  return fixture.withDb(async (db) => {
    const row = (
      await db.query(
        `UPDATE tasks SET status = 'ARMED', fencing_token = nextval('fencing_token_seq'),
                armed_at = now(), updated_at = now()
          WHERE id = $1 RETURNING fencing_token::text AS token, run_at`,
        [created.body.id],
      )
    ).rows[0];
    return { id: created.body.id, token: row.token, runAt: row.run_at.toISOString() };
  });
}

const exec = (task: Subject, action: string, body: Record<string, unknown>) =>
  call(fixture.api.baseUrl, "POST", `/v1/executions/${task.id}/${action}`, {
    key: fixture.tenant.apiKey,
    body: { fencing_token: task.token, worker_id: "w-real", ...body },
  });

const ACTIONS = ["start", "heartbeat", "complete", "fail", "interrupt"] as const;

/** The fields of each action that a valid body carries besides the attempt. */
const extraOf = (action: string): Record<string, unknown> =>
  action === "fail" ? { error: { message: "boom" } } : action === "complete" ? { result: 1 } : {};

const BAD_FIELDS: Record<string, unknown[]> = {
  worker_id: ["", "w".repeat(201), "\u0000", "\ud800", 1, null, [], {}],
  lease_ms: [-1, 0, 999, 3_600_001, 1.5, "1000", null, []],
  run_at: ["", "2030-13-01T00:00:00Z", "now", 1, null, []],
  unknown: [1, "x", null],
  result: ["\u0000", { k: "\ud800" }, { blob: "r".repeat(1025) }],
  error: [
    null,
    [],
    "x",
    { message: 1 },
    { message: "" },
    { message: "m", retryable: "yes" },
    { message: "m", details: "\u0000" },
    { message: "m", extra: 1 },
  ],
  message: ["", "\u0000", "x".repeat(4097), 1, null],
};

/** start, heartbeat and interrupt take small bodies (execution-routes.ts). */
const limitOf = (path: string) => (/\/(complete|fail)$/.test(path) ? MAX_BODY_BYTES : 4096);

function executionCase(rng: Rng): FuzzCase {
  const action = rng.pick(ACTIONS);
  const task = rng.pick([armed, running, completed]);
  const valid = { fencing_token: task.token, worker_id: "w-fuzz", ...extraOf(action) };
  const post = (kind: string, body: string | Uint8Array, over: Partial<FuzzCase> = {}) => ({
    kind: `${action}: ${kind}`,
    method: "POST",
    path: `/v1/executions/${task.id}/${action}`,
    body,
    ...over,
  });
  const json = (value: unknown) => JSON.stringify(value);
  switch (rng.int(9)) {
    case 0: {
      // A token that is not this attempt's: another task's, an older or a later one, made up.
      const current = BigInt(task.token);
      const wrong = rng.pick([
        (current - 1n).toString(),
        (current + 1n).toString(),
        (current + 1000n).toString(),
        "0",
        "1",
        othersTask.token,
        "9223372036854775807", // the largest bigint
        "9223372036854775808", // one past it
        "99999999999999999999",
        "00000000000000000000",
      ]);
      // A finished attempt's own token is stale for every call; "1" may be this task's own.
      const made = BigInt(wrong) === current ? (current + 1000n).toString() : wrong;
      const token = task === completed && rng.next() < 0.3 ? task.token : made;
      return post("wrong token", json({ ...valid, fencing_token: token }));
    }
    case 1:
      // The running task's own token, for a call it must refuse: start it again.
      return {
        ...post("stale start", json({ fencing_token: running.token, worker_id: "w-zombie" })),
        kind: "start: a started attempt",
        path: `/v1/executions/${running.id}/start`,
      };
    case 2: {
      const token = rng.pick([
        "",
        " 1",
        "1 ",
        "-1",
        "1e3",
        "0x10",
        "1".repeat(21),
        "١٢",
        1,
        Number(task.token),
        null,
        [],
        {},
        true,
      ]);
      return post("malformed token", json({ ...valid, fencing_token: token }));
    }
    case 3: {
      // Each value is wrong for its field; a field the action does not take is refused as unknown.
      const field = rng.pick(Object.keys(BAD_FIELDS));
      return post(`bad ${field}`, json({ ...valid, [field]: rng.pick(BAD_FIELDS[field]!) }));
    }
    case 4:
      return post(
        "malformed body",
        rng.pick([
          "",
          "{",
          "null",
          "[]",
          '"x"',
          "{}",
          '{"fencing_token":"1"}',
          '{"worker_id":"w"}',
          "\u00ff\u00fe",
          json(valid).slice(0, rng.int(json(valid).length)),
        ]),
      );
    case 5:
      return post(
        "result or details too large",
        json({
          ...valid,
          ...(action === "fail"
            ? { error: { message: "m", details: { blob: "d".repeat(1025 + rng.int(4000)) } } }
            : { result: { blob: "r".repeat(1025 + rng.int(4000)) } }),
        }),
      );
    case 6:
      return post("key without execute", json(valid), {
        authorization: `Bearer ${rng.pick([readOnlyKey, submitOnlyKey])}`,
      });
    case 7: {
      const id = rng.pick([
        othersTask.id,
        "x",
        "%00",
        "00000000-0000-0000-0000-000000000000",
        "01a22671-d5ac-7ed8-b442-80a19b2f1155",
        "..%2F..",
        "'; DROP TABLE tasks; --",
        "a".repeat(300),
      ]);
      return {
        ...post(
          "wrong task",
          json(id === othersTask.id ? { ...valid, fencing_token: othersTask.token } : valid),
        ),
        path: `/v1/executions/${id}/${action}`,
      };
    }
    default:
      return post("bad auth", json(valid), {
        authorization: rng.pick([
          "",
          "Bearer",
          "Bearer cfk_wrong",
          `Bearer ${"k".repeat(600)}`,
          "Basic x",
        ]),
      });
  }
}

const rowsOf = (tasks: Subject[]) =>
  fixture.withDb(async (db) => {
    const found = await db.query(
      `SELECT id, status, attempt, fencing_token::text, lease_owner, lease_expires_at, result,
              last_error, updated_at FROM tasks WHERE id = ANY($1::uuid[]) ORDER BY id`,
      [tasks.map((t) => t.id)],
    );
    return found.rows;
  });

describe("fuzz: the worker protocol", () => {
  it("refuses 2,000 wrong, stale and malformed execution calls with 4xx and changes no task", async () => {
    const subjects = [armed, running, completed, othersTask];
    const [beforeRows, beforeStored] = [await rowsOf(subjects), await storedRows(fixture.withDb)];
    const run = await runFuzz({
      file: FILE,
      target: {
        baseUrl: fixture.api.baseUrl,
        apiKey: fixture.tenant.apiKey,
        limitOf,
      },
      count: 2000,
      generate: executionCase,
    });
    expect(run.failures.slice(0, 10), failureMessage(run)).toEqual([]);
    expect(await rowsOf(subjects), "a refused call changed a task").toEqual(beforeRows);
    expect(await storedRows(fixture.withDb), "rows written by refused calls").toEqual(beforeStored);
    // The real attempt still holds: its worker completes it.
    const done = await exec(running, "complete", { result: { after: "fuzz" } });
    expect(done.status).toBe(200);
  }, 600_000);
});
