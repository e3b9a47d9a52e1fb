/** Every 400/401/404/405/413/422/429 rule of the task endpoints, and that rejected requests write nothing. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/adapters/clock/system-clock.js";
import { createPgPool } from "../../src/adapters/pg/pool.js";
import { PgTaskStore } from "../../src/adapters/pg/task-store.js";
import { GroupCommitter } from "../../src/app/ingest/group-commit.js";
import { revokeKey } from "../../src/main/admin.js";
import {
  type ApiFixture,
  call,
  newTenant,
  startApiFixture,
  type TestApi,
  type TestTenant,
} from "./support/api.js";
import { rawRequest } from "./support/raw-http.js";
import { type TestDatabase, withPg } from "./support/services.js";

let fixture: ApiFixture;
let db: TestDatabase;
let api: TestApi;
let t: TestTenant;

beforeAll(async () => {
  fixture = await startApiFixture(
    { maxSingleBodyBytes: 8192, authCacheTtlMs: 0 },
    { maxPayloadBytes: 1024 },
  );
  ({ db, api, tenant: t } = fixture);
});

afterAll(async () => {
  await fixture?.stop();
});

const taskCount = (tenantId: string) =>
  withPg(
    db.url,
    async (c) =>
      (await c.query("SELECT count(*)::int AS n FROM tasks WHERE tenant_id = $1", [tenantId]))
        .rows[0].n,
  );

const expectError = async (
  // biome-ignore lint/suspicious/noExplicitAny: a JSON answer; the assertions check its shape
  res: Promise<{ status: number; body: any }>,
  status: number,
  code: string,
) => {
  const answer = await res;
  expect(answer.status).toBe(status);
  expect(answer.body.error.code).toBe(code);
  expect(typeof answer.body.error.message).toBe("string");
  expect(answer.body.error.details).toBeTypeOf("object");
};

const postRaw = (rawBody: string | Uint8Array, key = t.apiKey) =>
  call(api.baseUrl, "POST", "/v1/tasks", { key, rawBody });
const post = (body: unknown, key = t.apiKey) =>
  call(api.baseUrl, "POST", "/v1/tasks", { key, body });

describe("400 malformed", () => {
  const cases: Array<[string, string | Uint8Array]> = [
    ["empty body", ""],
    ["not JSON", "{type:"],
    ["truncated JSON", '{"type":"a","payload":{"x":'],
    ["invalid UTF-8", new Uint8Array([0x7b, 0x22, 0x74, 0xff, 0xfe, 0x22, 0x7d])],
    ["a JSON array", "[]"],
    ["a JSON string", '"hi"'],
    ["null", "null"],
  ];
  it.each(cases)("rejects %s as invalid_json or invalid_request", async (_, body) => {
    const res = await postRaw(body);
    expect(res.status).toBe(400);
    expect(["invalid_json", "invalid_request"]).toContain(res.body.error.code);
  });

  const shapes: Array<[string, unknown]> = [
    ["missing type", { payload: {} }],
    ["type not a string", { type: 42 }],
    ["delay_ms a string", { type: "a", delay_ms: "5" }],
    ["priority a number", { type: "a", priority: 1 }],
    ["max_attempts a string", { type: "a", max_attempts: "3" }],
    ["idempotency_key a number", { type: "a", idempotency_key: 7 }],
    ["backoff not an object", { type: "a", backoff: "fast" }],
    ["unknown field", { type: "a", runAt: "2030-01-01T00:00:00Z" }],
    ["unknown backoff field", { type: "a", backoff: { factor: 2 } }],
  ];
  it.each(shapes)("rejects %s as invalid_request", async (_, body) => {
    await expectError(post(body), 400, "invalid_request");
  });

  it("rejects a batch that is not {tasks: [...]}", async () => {
    const batch = (body: unknown) =>
      call(api.baseUrl, "POST", "/v1/tasks/batch", { key: t.apiKey, body });
    await expectError(batch([{ type: "a" }]), 400, "invalid_request");
    await expectError(batch({ tasks: "a" }), 400, "invalid_request");
    await expectError(batch({ tasks: [{ type: 1 }] }), 400, "invalid_request");
  });

  it.each([
    "status=DONE",
    "status=%00",
    "limit=0",
    "limit=1001",
    "limit=abc",
    "cursor=nope",
    "type=",
    "type=%00",
    "type=a%00b",
    "type=send%20email",
    "type=%ED%A0%80",
  ])("rejects the list query %s", async (query) => {
    await expectError(
      call(api.baseUrl, "GET", `/v1/tasks?${query}`, { key: t.apiKey }),
      400,
      "invalid_request",
    );
  });
});

describe("422 semantically invalid", () => {
  const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
  const cases: Array<[string, unknown]> = [
    ["run_at beyond the horizon", { type: "a", run_at: inDays(8) }],
    ["delay_ms beyond the horizon", { type: "a", delay_ms: 8 * 86_400_000 }],
    ["a huge delay_ms", { type: "a", delay_ms: 1e300 }],
    ["run_at not RFC 3339", { type: "a", run_at: "tomorrow" }],
    ["run_at without offset", { type: "a", run_at: "2030-01-01T00:00:00" }],
    ["both run_at and delay_ms", { type: "a", run_at: inDays(1), delay_ms: 5 }],
    ["negative delay_ms", { type: "a", delay_ms: -1 }],
    ["fractional delay_ms", { type: "a", delay_ms: 1.5 }],
    ["unknown priority", { type: "a", priority: "urgent" }],
    ["max_attempts 0", { type: "a", max_attempts: 0 }],
    ["max_attempts 101", { type: "a", max_attempts: 101 }],
    ["timeout_ms 0", { type: "a", timeout_ms: 0 }],
    ["unknown backoff strategy", { type: "a", backoff: { strategy: "linear" } }],
    ["empty type", { type: "" }],
    ["type with spaces", { type: "send email" }],
    ["type too long", { type: "a".repeat(129) }],
    ["idempotency_key too long", { type: "a", idempotency_key: "k".repeat(256) }],
    ["idempotency_key with spaces", { type: "a", idempotency_key: "a b" }],
    ["backoff base_ms over max_ms", { type: "a", backoff: { base_ms: 5000, max_ms: 1000 } }],
    ["backoff base_ms over the default max_ms", { type: "a", backoff: { base_ms: 3_600_001 } }],
    [
      "payload nested too deep",
      { type: "a", payload: JSON.parse("[".repeat(40) + "]".repeat(40)) },
    ],
  ];
  it.each(cases)("rejects %s", async (_, body) => {
    const before = await taskCount(t.id);
    await expectError(post(body), 422, "unprocessable");
    expect(await taskCount(t.id)).toBe(before);
  });

  it("rejects a huge number that overflows to Infinity", async () => {
    await expectError(postRaw('{"type":"a","payload":{"n":1e400}}'), 422, "unprocessable");
  });

  // Valid JSON, but jsonb cannot store U+0000 or a lone surrogate: before it was
  // refused here, Postgres refused it (500) and failed the whole group commit.
  it.each([
    ["a NUL in a value", '{"type":"a","payload":{"k":"x\\u0000y"}}', "$.k"],
    ["a NUL in a key", '{"type":"a","payload":{"a":{"\\u0000":1}}}', '$.a["\\u0000"]'],
    ["a lone high surrogate", '{"type":"a","payload":["ok","\\ud800"]}', "$[1]"],
    ["a lone low surrogate in a key", '{"type":"a","payload":{"\\udc00":1}}', '$["\\udc00"]'],
  ])("rejects %s as unsupported_unicode and writes nothing", async (_, body, path) => {
    const before = await taskCount(t.id);
    const res = await postRaw(body);
    expect(res.status).toBe(422);
    expect(res.body.error.details).toMatchObject({ rule: "unsupported_unicode", path });
    const batch = await call(api.baseUrl, "POST", "/v1/tasks/batch", {
      key: t.apiKey,
      rawBody: `{"tasks":[{"type":"ok"},${body}]}`,
    });
    expect(batch.status).toBe(422);
    expect(batch.body.error.details).toMatchObject({ index: 1, rule: "unsupported_unicode" });
    expect(await taskCount(t.id)).toBe(before);
  });

  it("still stores a well-formed surrogate pair", async () => {
    const res = await postRaw('{"type":"a","payload":{"\\ud83d\\ude00":"\\ud83d\\ude00"}}');
    expect(res.status).toBe(201);
    expect(res.body.payload).toEqual({ "😀": "😀" });
  });

  it("turns a value Postgres refuses anyway into 422; its group neighbours still commit", async () => {
    // The backstop behind validation: a data exception (SQLSTATE class 22) is the
    // request's fault. Here a row skips validation and reaches the store directly.
    const pool = createPgPool({
      connectionString: api.config.databaseUrl,
      maxConnections: 1,
      statementTimeoutMs: 5000,
      connectTimeoutMs: 2000,
      role: "chronofence_api",
      applicationName: "test-backstop",
      onError: () => undefined,
    });
    try {
      const store = new PgTaskStore(pool);
      const row = (payloadJson: string) => ({
        draft: {
          id: crypto.randomUUID(),
          tenantId: t.id,
          type: "backstop",
          payloadJson,
          priority: "standard" as const,
          runAtMs: Date.now(),
          maxAttempts: 3,
          timeoutMs: 30_000,
          backoff: { strategy: "fixed" as const, baseMs: 1, maxMs: 1 },
          idempotencyKey: null,
          createdAtMs: Date.now(),
        },
        requestHash: null,
        apiKeyId: t.apiKeyId,
        requestId: "test",
      });
      await expect(store.insertMany([row('"\\u0000"')], Date.now())).rejects.toMatchObject({
        code: "unprocessable",
        details: { rule: "data_exception", sqlstate: "22P05" },
      });
      // In one group commit with good rows: the bad request fails alone.
      const committer = new GroupCommitter(
        store,
        systemClock,
        { maxBatchRows: 100, maxInFlight: 1, maxQueuedRows: 100 },
        () => undefined,
      );
      const [good, bad, alsoGood] = await Promise.allSettled([
        committer.submit([row('{"ok":1}')]),
        committer.submit([row('"\\ud800"')]),
        committer.submit([row('{"ok":2}')]),
      ]);
      expect(good).toEqual({ status: "fulfilled", value: [{ kind: "created" }] });
      expect(alsoGood).toEqual({ status: "fulfilled", value: [{ kind: "created" }] });
      expect(bad).toMatchObject({ status: "rejected", reason: { code: "unprocessable" } });
    } finally {
      await pool.end();
    }
  });

  it("rejects an empty batch and one over 1000 tasks", async () => {
    const batch = (n: number) =>
      call(api.baseUrl, "POST", "/v1/tasks/batch", {
        key: t.apiKey,
        body: { tasks: Array.from({ length: n }, () => ({ type: "a" })) },
      });
    await expectError(batch(0), 422, "unprocessable");
    await expectError(batch(1001), 422, "unprocessable");
  });

  it("rejects the whole batch, naming the item, when one item is invalid", async () => {
    const before = await taskCount(t.id);
    const res = await call(api.baseUrl, "POST", "/v1/tasks/batch", {
      key: t.apiKey,
      body: { tasks: [{ type: "ok" }, { type: "ok", max_attempts: 0 }] },
    });
    expect(res.status).toBe(422);
    expect(res.body.error.details.index).toBe(1);
    expect(await taskCount(t.id)).toBe(before);
  });
});

describe("401 authentication", () => {
  it("accepts the Bearer scheme in any case (RFC 7235)", async () => {
    for (const scheme of ["bearer", "BEARER", "BeArEr"]) {
      const res = await call(api.baseUrl, "POST", "/v1/tasks", {
        rawBody: '{"type":"a"}',
        headers: { authorization: `${scheme} ${t.apiKey}` },
      });
      expect(res.status, scheme).toBe(201);
    }
  });

  it("answers 401 on the headers, before the body arrives, and closes the connection", async () => {
    const port = Number(new URL(api.baseUrl).port);
    const head = (auth: string) =>
      `POST /v1/tasks/batch HTTP/1.1\r\nHost: a\r\n${auth}Content-Type: application/json\r\nContent-Length: 15000000\r\n\r\n{"tasks":[`;
    // No key, a malformed one (refused without a lookup) and an unknown one (a lookup).
    // The body never follows: waiting for it would end in 408 at the request deadline.
    for (const auth of [
      "",
      "Authorization: Basic x\r\n",
      "Authorization: Bearer cfk_unknown\r\n",
    ]) {
      const answer = await rawRequest(port, head(auth), { untilClosed: true, timeoutMs: 8000 });
      expect(answer, auth).toMatchObject({ status: 401, closed: true, timedOut: false });
    }
  });

  it("rejects a missing, malformed, unknown or revoked key", async () => {
    const body = { type: "a" };
    await expectError(call(api.baseUrl, "POST", "/v1/tasks", { body }), 401, "unauthorized");
    await expectError(post(body, "cfk_not-a-key"), 401, "unauthorized");
    await expectError(call(api.baseUrl, "GET", "/v1/tasks", {}), 401, "unauthorized");
    const doomed = await newTenant(api.config);
    expect((await post(body, doomed.apiKey)).status).toBe(201);
    expect(await revokeKey(api.config, systemClock, doomed.apiKeyId)).toBe(true);
    await expectError(post(body, doomed.apiKey), 401, "unauthorized");
  });
});

describe("413 too large", () => {
  it("rejects a payload over the tenant's limit and writes nothing", async () => {
    const before = await taskCount(t.id);
    await expectError(post({ type: "a", payload: "x".repeat(1100) }), 413, "payload_too_large");
    await expectError(post({ type: "a", payload: "é".repeat(600) }), 413, "payload_too_large");
    expect(await taskCount(t.id)).toBe(before);
    expect((await post({ type: "a", payload: "x".repeat(900) })).status).toBe(201);
  });

  it("rejects a body over the server's limit while it streams", async () => {
    await expectError(
      postRaw(`{"type":"a","payload":"${"x".repeat(9000)}"}`),
      413,
      "payload_too_large",
    );
  });

  it("caps the body by the tenant's payload limit, not only the server's", async () => {
    const small = await newTenant(api.config, { maxPayloadBytes: 100 });
    // 4 × 100 + 4096 bytes for one task: well under the server's 8192.
    const res = await call(api.baseUrl, "POST", "/v1/tasks", {
      key: small.apiKey,
      rawBody: `{"type":"a","payload":"x","pad":"${" ".repeat(5000)}"}`,
    });
    expect(res.status).toBe(413);
    expect(res.body.error.details).toEqual({ max_body_bytes: 4496 });
    // Whitespace is not payload: a loosely formatted body within the allowance is fine.
    const pretty = `{"type":"a","payload":${" ".repeat(3000)}{"y":"${"y".repeat(80)}"}}`;
    expect((await postRaw(pretty, small.apiKey)).status).toBe(201);
  });

  it("rejects one oversized item of a batch", async () => {
    const res = await call(api.baseUrl, "POST", "/v1/tasks/batch", {
      key: t.apiKey,
      body: { tasks: [{ type: "a" }, { type: "a", payload: "x".repeat(2000) }] },
    });
    expect(res.status).toBe(413);
    expect(res.body.error.details.index).toBe(1);
  });
});

describe("429 rate limit", () => {
  it("rejects beyond the bucket with Retry-After and RateLimit headers, writing nothing", async () => {
    const slow = await newTenant(api.config, { ratePerS: 0.5, burst: 2 });
    expect((await post({ type: "a" }, slow.apiKey)).status).toBe(201);
    expect((await post({ type: "a" }, slow.apiKey)).status).toBe(201);
    const limited = await post({ type: "a" }, slow.apiKey);
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe("rate_limited");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(limited.headers.get("ratelimit-limit")).toBe("2");
    expect(limited.headers.get("ratelimit-remaining")).toBe("0");
    expect(Number(limited.headers.get("ratelimit-reset"))).toBeGreaterThanOrEqual(1);
    const batch = await call(api.baseUrl, "POST", "/v1/tasks/batch", {
      key: slow.apiKey,
      body: { tasks: [{ type: "a" }, { type: "b" }] },
    });
    expect(batch.status).toBe(429);
    expect(Number(batch.headers.get("retry-after"))).toBeLessThanOrEqual(4);
    expect(batch.body.error.details.retry_after_ms).toBeGreaterThan(0);
    expect(await taskCount(slow.id)).toBe(2);
    const metrics = await call(api.baseUrl, "GET", "/metrics");
    expect(metrics.body).toMatch(/cf_rate_limited_requests_total [1-9]/);
  });

  it("refuses a batch larger than the burst with 422: waiting could never help", async () => {
    const small = await newTenant(api.config, { ratePerS: 1000, burst: 3 });
    const res = await call(api.baseUrl, "POST", "/v1/tasks/batch", {
      key: small.apiKey,
      body: { tasks: Array.from({ length: 4 }, () => ({ type: "a" })) },
    });
    expect(res.status).toBe(422);
    expect(res.headers.get("retry-after")).toBeNull();
    expect(res.body.error.details).toEqual({ rule: "batch_exceeds_burst", tasks: 4, burst: 3 });
    expect(await taskCount(small.id)).toBe(0);
    const fits = await call(api.baseUrl, "POST", "/v1/tasks/batch", {
      key: small.apiKey,
      body: { tasks: Array.from({ length: 3 }, () => ({ type: "a" })) },
    });
    expect(fits.status).toBe(201);
  });
});

describe("404 and 405", () => {
  it("answers unknown ids, unknown routes and wrong methods", async () => {
    const missing = "01a22671-d5ac-7ed8-b442-80a19b2f1155";
    await expectError(
      call(api.baseUrl, "GET", `/v1/tasks/${missing}`, { key: t.apiKey }),
      404,
      "not_found",
    );
    await expectError(
      call(api.baseUrl, "GET", "/v1/tasks/not-a-uuid", { key: t.apiKey }),
      404,
      "not_found",
    );
    await expectError(
      call(api.baseUrl, "DELETE", `/v1/tasks/${missing}`, { key: t.apiKey }),
      404,
      "not_found",
    );
    await expectError(call(api.baseUrl, "GET", "/v2/things"), 404, "route_not_found");
    await expectError(
      call(api.baseUrl, "PUT", "/v1/tasks", { key: t.apiKey }),
      405,
      "method_not_allowed",
    );
  });
});
