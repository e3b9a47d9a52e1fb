/**
 * Hostile input: at least 10,000 malformed, truncated, oversized, wrongly
 * typed and hostile requests. Each must get a 4xx, nothing may be written, and
 * the server must still answer a valid request afterwards. The cases come
 * from a seeded PRNG (the run's CF_PROPERTY_SEED, support/property.ts); a
 * failure names each failing case's index, kind and body, and the command
 * that sends that one case again:
 *
 *   CF_PROPERTY_SEED=<seed> CF_FUZZ_CASE=<index> npx vitest run node/test/integration/fuzz.test.ts
 *
 * A body larger than the route's limit is sent as its headers only (with the
 * true Content-Length) and the answer read before anything else: the server
 * refuses it on its headers (413) and closes, and a client still writing the
 * body would race that close (a reset can discard the 413 before it is read),
 * so an error there says nothing. Every other case goes through fetch, and a
 * network error is a failure like any other non-4xx.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROPERTY_SEED, propertyParams } from "../support/property.js";
import {
  type ApiFixture,
  call,
  startApiFixture,
  type TestApi,
  type TestTenant,
} from "./support/api.js";
import { type RawAnswer, rawRequest } from "./support/raw-http.js";
import { type TestDatabase, withPg } from "./support/services.js";

const SEED = PROPERTY_SEED;
/** One case of the run (its index), to replay a failure alone. */
const ONLY_CASE = process.env.CF_FUZZ_CASE === undefined ? null : Number(process.env.CF_FUZZ_CASE);
const MAX_BODY_BYTES = 16 * 1024;
const MAX_BATCH_BODY_BYTES = 64 * 1024;
const MAX_PAYLOAD_BYTES = 4096;

let fixture: ApiFixture;
let db: TestDatabase;
let api: TestApi;
let tenant: TestTenant;

beforeAll(async () => {
  fixture = await startApiFixture(
    {
      maxSingleBodyBytes: MAX_BODY_BYTES,
      maxBatchBodyBytes: MAX_BATCH_BODY_BYTES,
      requestTimeoutMs: 1500,
    },
    { maxPayloadBytes: MAX_PAYLOAD_BYTES, ratePerS: 1e9, burst: 1e9 },
  );
  ({ db, api, tenant } = fixture);
});

afterAll(async () => {
  await fixture?.stop();
});

/** mulberry32: tiny, seedable, good enough to pick cases. */
function prng(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  const bytes = (n: number) => Uint8Array.from({ length: n }, () => int(256));
  return { next, int, pick, bytes };
}

type Rng = ReturnType<typeof prng>;
interface Case {
  kind: string;
  method: string;
  path: string;
  body?: string | Uint8Array;
  authorization?: string;
  /** Sent as these bytes on a socket of its own instead of through fetch. */
  raw?: string;
}

const VALID = {
  type: "fuzz.ok",
  payload: { a: 1 },
  delay_ms: 1000,
  priority: "bulk",
  max_attempts: 2,
};
const WRONG_TYPES: Record<string, unknown[]> = {
  type: [1, true, null, [], {}, 1.5],
  payload: [], // any JSON is a valid payload
  delay_ms: ["1", true, null, [], {}],
  run_at: [1, true, null, [], {}],
  priority: [1, true, null, [], {}],
  idempotency_key: [1, true, null, [], {}],
  max_attempts: ["3", true, null, [], {}],
  timeout_ms: ["3", true, null, [], {}],
  backoff: ["x", 1, true, null, []],
};
const BAD_VALUES: Record<string, unknown[]> = {
  type: ["", " ", "a b", "ü", "a".repeat(129), "\u0000", "<script>"],
  delay_ms: [-1, 0.5, 1e300, Number.MAX_SAFE_INTEGER, 8 * 86_400_000],
  run_at: [
    "",
    "now",
    "2030-13-01T00:00:00Z",
    "2030-01-01",
    "9999-12-31T23:59:59Z",
    "2030-01-01T00:00:00",
  ],
  priority: ["", "urgent", "CRITICAL", "standard "],
  idempotency_key: ["", " ", "a b", "k".repeat(256), "é"],
  max_attempts: [0, -1, 101, 1.5, 1e9],
  timeout_ms: [0, -5, 0.1, 1e12],
};

function bodyCase(rng: Rng): Case {
  const post = (kind: string, body: string | Uint8Array): Case => ({
    kind,
    method: "POST",
    path: "/v1/tasks",
    body,
  });
  const json = JSON.stringify(VALID);
  switch (rng.int(13)) {
    case 0:
      return post("random bytes", rng.bytes(1 + rng.int(2000)));
    case 1:
      return post("truncated JSON", json.slice(0, rng.int(json.length)));
    case 2: {
      const field = rng.pick(Object.keys(WRONG_TYPES).filter((f) => f !== "payload"));
      return post(
        `wrong type ${field}`,
        JSON.stringify({ ...VALID, [field]: rng.pick(WRONG_TYPES[field]!) }),
      );
    }
    case 3: {
      const field = rng.pick(Object.keys(BAD_VALUES));
      const bad: Record<string, unknown> = { ...VALID, [field]: rng.pick(BAD_VALUES[field]!) };
      if (field === "run_at") delete bad.delay_ms;
      return post(`bad value ${field}`, JSON.stringify(bad));
    }
    case 4:
      return post(
        "oversized payload",
        JSON.stringify({ ...VALID, payload: "x".repeat(MAX_PAYLOAD_BYTES + 1 + rng.int(8000)) }),
      );
    case 5: {
      if (rng.next() < 0.5) {
        return post(
          "oversized body",
          `{"type":"a","payload":"${"y".repeat(MAX_BODY_BYTES + rng.int(50_000))}"}`,
        );
      }
      // No Content-Length: the limit is found while streaming. One chunk just over it and no
      // end: the server has read all of it when it answers 413, so its close loses no answer.
      const size = MAX_BODY_BYTES + 1 + rng.int(1000);
      const raw = `POST /v1/tasks HTTP/1.1\r\nHost: fuzz\r\nAuthorization: Bearer ${tenant.apiKey}\r\nTransfer-Encoding: chunked\r\n\r\n${size.toString(16)}\r\n${"z".repeat(size)}\r\n`;
      return { kind: "oversized chunked body", method: "POST", path: "/v1/tasks", raw };
    }
    case 6: {
      const depth = 33 + rng.int(rng.next() < 0.1 ? 200_000 : 2000);
      const deep = "[".repeat(depth) + "]".repeat(depth);
      return post("deep JSON", rng.next() < 0.5 ? deep : `{"type":"a","payload":${deep}}`);
    }
    case 7: {
      const huge = rng.pick(["1e400", "-1e400", "9".repeat(400), `1${"0".repeat(5000)}`]);
      return post(
        "huge number",
        rng.next() < 0.5
          ? `{"type":"a","payload":{"n":${huge}}}`
          : `{"type":"a","delay_ms":${huge}}`,
      );
    }
    case 8: {
      const bytes = Buffer.from(json);
      const at = 1 + rng.int(bytes.length - 2);
      const invalid = rng.pick([
        [0xff],
        [0xc0, 0x80],
        [0xed, 0xa0, 0x80],
        [0xf8, 0x88, 0x80, 0x80, 0x80],
        [0xe2, 0x82],
      ]);
      return post(
        "invalid UTF-8",
        Buffer.concat([bytes.subarray(0, at), Buffer.from(invalid), bytes.subarray(at)]),
      );
    }
    case 9: {
      const key = rng.pick(["__proto__", "constructor", "prototype", "toString", "type\u0000"]);
      return post("hostile key", `{"type":"a","${key}":{"polluted":true}}`);
    }
    case 10: {
      const body = rng.pick([
        "{}",
        '{"tasks":null}',
        `{"tasks":[${'{"type":"a"},'.repeat(1000)}{"type":"a"}]}`,
        '{"tasks":[{"type":1}]}',
        '{"tasks":[],"x":1}',
        '{"tasks":[{"type":"a","max_attempts":0}]}',
      ]);
      return { kind: "bad batch", method: "POST", path: "/v1/tasks/batch", body };
    }
    case 11: {
      // Valid JSON that jsonb refuses: NUL and lone surrogates, as JSON escapes.
      const bad = rng.pick(["\\u0000", "a\\u0000b", "\\ud800", "x\\udfff", "\\udc00\\ud800"]);
      const payload = rng.pick([`"${bad}"`, `{"${bad}":1}`, `{"k":["ok",{"n":"${bad}"}]}`]);
      const item = `{"type":"a","payload":${payload}}`;
      if (rng.next() < 0.5) return post("unsupported unicode", item);
      const body = `{"tasks":[{"type":"ok"},${item}]}`;
      return {
        kind: "unsupported unicode in a batch",
        method: "POST",
        path: "/v1/tasks/batch",
        body,
      };
    }
    default: {
      const auth = rng.pick([
        "",
        "Bearer",
        "Bearer ",
        "Basic abc",
        `Bearer ${"k".repeat(600)}`,
        "Bearer cfk_wrong",
        "bearer x",
      ]);
      return {
        kind: "bad auth",
        method: "POST",
        path: "/v1/tasks",
        body: json,
        authorization: auth,
      };
    }
  }
}

function queryCase(rng: Rng): Case {
  const path = rng.pick([
    `/v1/tasks/${rng.pick(["x", "%00", "..%2F..", "0".repeat(36), "01a22671-d5ac-7ed8-b442-80a19b2f1155"])}`,
    `/v1/tasks?status=${rng.pick(["", "x", "running", "%ff", "%00"])}`,
    `/v1/tasks?type=${rng.pick(["", "%00", "a%00b", "a%20b", "%ED%A0%80", "%ff"])}`,
    `/v1/tasks?limit=${rng.pick(["-1", "0", "1e3", "99999", "NaN"])}`,
    `/v1/tasks?cursor=${rng.pick(["x", "'; DROP TABLE tasks; --", "%27"])}`,
    `/v1/tasks?order=${rng.pick(["", "x", "updated_at&updated_after=%00", "updated_at&updated_after=1e999", "updated_at&cursor=9999999999999999_x", "id&updated_after=2030-01-01T00:00:00Z"])}`,
    `/v${2 + rng.int(8)}/${rng.pick(["tasks", "x", ""])}`,
  ]);
  return { kind: "bad query", method: rng.pick(["GET", "DELETE"]), path };
}

interface Sent {
  status: number;
  /** Why no status arrived (a network error, or silence). */
  error?: string;
}

const bodyBytes = (body: string | Uint8Array | undefined) =>
  body === undefined ? 0 : typeof body === "string" ? Buffer.byteLength(body) : body.byteLength;

const limitOf = (path: string) =>
  path === "/v1/tasks/batch" ? MAX_BATCH_BODY_BYTES : MAX_BODY_BYTES;

async function send(c: Case): Promise<Sent> {
  if (c.raw !== undefined) return sendRaw(c.raw);
  const headers: Record<string, string> = {
    authorization: c.authorization ?? `Bearer ${tenant.apiKey}`,
  };
  if (c.authorization === "") delete headers.authorization;
  if (bodyBytes(c.body) > limitOf(c.path)) return sendHeadersOnly(c, headers);
  const init: RequestInit = { method: c.method, headers };
  if (c.body !== undefined) init.body = c.body as BodyInit;
  try {
    const response = await fetch(`${api.baseUrl}${c.path}`, init);
    await response.arrayBuffer();
    return { status: response.status };
  } catch (error) {
    return { status: -1, error: String((error as Error).cause ?? error) };
  }
}

/** An over-limit body: its headers, with the true Content-Length; the answer must come on them. */
async function sendHeadersOnly(c: Case, headers: Record<string, string>): Promise<Sent> {
  const lines = [`${c.method} ${c.path} HTTP/1.1`, "Host: fuzz"];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  lines.push(`Content-Length: ${bodyBytes(c.body)}`, "", "");
  return sendRaw(lines.join("\r\n"));
}

async function sendRaw(data: string): Promise<Sent> {
  const answer = await rawRequest(Number(new URL(api.baseUrl).port), data);
  if (answer.status !== null) return { status: answer.status };
  return { status: -1, error: answer.timedOut ? "no answer in 5 s" : "closed without a status" };
}

/** What a failing case looks like in the message: enough to recognise it, the command to replay it. */
function describeCase(index: number, c: Case, sent: Sent) {
  const content = c.raw ?? c.body;
  const bytes = bodyBytes(content);
  const text =
    content === undefined
      ? ""
      : typeof content === "string"
        ? content
        : Buffer.from(content).toString("latin1");
  return {
    index,
    kind: c.kind,
    request: `${c.method} ${c.path}`,
    status: sent.status,
    ...(sent.error && { error: sent.error }),
    body:
      bytes > 160
        ? `${JSON.stringify(text.slice(0, 160))}… (${bytes} bytes)`
        : JSON.stringify(text),
    replay: `CF_PROPERTY_SEED=${SEED} CF_FUZZ_CASE=${index} npx vitest run node/test/integration/fuzz.test.ts`,
  };
}

describe("fuzz", () => {
  it("answers 10,000 hostile requests with 4xx, writes nothing, and keeps serving", async () => {
    propertyParams(); // prints the seed
    const rng = prng(SEED);
    const cases = Array.from({ length: 10_000 }, () =>
      rng.next() < 0.85 ? bodyCase(rng) : queryCase(rng),
    );
    const chosen = ONLY_CASE === null ? cases.map((_, i) => i) : [ONLY_CASE];
    const countTasks = async () =>
      (await withPg(db.url, (c) => c.query("SELECT count(*)::int AS n FROM tasks"))).rows[0].n;
    const before = await countTasks();
    const failures: Array<ReturnType<typeof describeCase>> = [];
    const concurrency = 32;
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < chosen.length) {
          const index = chosen[next++]!;
          const c = cases[index]!;
          const sent = await send(c);
          if (sent.status < 400 || sent.status >= 500) failures.push(describeCase(index, c, sent));
        }
      }),
    );
    expect(failures.slice(0, 10), `seed ${SEED}: ${failures.length} failing cases`).toEqual([]);
    expect(await countTasks(), "tasks written by refused requests").toBe(before);
    const ok = await call(api.baseUrl, "POST", "/v1/tasks", { key: tenant.apiKey, body: VALID });
    expect(ok.status).toBe(201);
  }, 120_000); // about 20 s on a loaded 2-core machine

  it("survives broken HTTP framing and header floods: a 4xx or a close, never silence", {
    timeout: 90_000,
  }, async () => {
    const port = Number(new URL(api.baseUrl).port);
    const auth = `Authorization: Bearer ${tenant.apiKey}\r\n`;
    const flood = Array.from({ length: 500 }, (_, i) => `X-Flood-${i}: ${"v".repeat(20)}`).join(
      "\r\n",
    );
    const cases: Array<[string, string, (answer: RawAnswer) => boolean]> = [
      [
        "bad Content-Length",
        `POST /v1/tasks HTTP/1.1\r\nHost: a\r\n${auth}Content-Length: abc\r\n\r\n{}`,
        is4xx,
      ],
      [
        "bad chunk size",
        `POST /v1/tasks HTTP/1.1\r\nHost: a\r\n${auth}Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
        is4xx,
      ],
      // Our request deadline (1.5 s here) answers 408 and closes.
      [
        "body shorter than Content-Length",
        `POST /v1/tasks HTTP/1.1\r\nHost: a\r\n${auth}Content-Length: 100\r\n\r\n{"type"`,
        is4xx,
      ],
      [
        "Content-Length over the limit",
        `POST /v1/tasks HTTP/1.1\r\nHost: a\r\n${auth}Content-Length: 999999999\r\n\r\n{`,
        is4xx,
      ],
      // uWS answers a request line that is not HTTP/1.1 with 505 itself.
      [
        "non-HTTP bytes",
        "\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u0000\u00a1\u0003\u0003",
        (a) => closedOr4xx(a) || a.status === 505,
      ],
      ["header flood", `GET /healthz HTTP/1.1\r\nHost: a\r\n${flood}\r\n\r\n`, closedOr4xx],
      // uWS answers nothing here and closes the connection at its idle timeout
      // (10 s, checked every 4 s): hence the long wait below, which only this case uses.
      ["missing Host", "GET /healthz HTTP/1.1\r\n\r\n", closedOr4xx],
    ];
    const results = await Promise.all(
      Array.from({ length: 20 }, () => cases)
        .flat()
        .map(async ([name, data, accept]) => {
          const answer = await rawRequest(port, data, { timeoutMs: 40_000 });
          return { name, ...answer, ok: accept(answer) };
        }),
    );
    expect(results.filter((r) => !r.ok)).toEqual([]);
    expect((await call(api.baseUrl, "GET", "/healthz")).status).toBe(200);
    const ok = await call(api.baseUrl, "POST", "/v1/tasks", { key: tenant.apiKey, body: VALID });
    expect(ok.status).toBe(201);
  });
});

/** A status line with a 4xx code arrived (whatever happened to the connection after). */
function is4xx({ status }: RawAnswer): boolean {
  return status !== null && status >= 400 && status < 500;
}

/** A 4xx, or the server closed the connection without a word; silence until our timeout fails. */
function closedOr4xx(answer: RawAnswer): boolean {
  return is4xx(answer) || (answer.status === null && answer.closed && !answer.timedOut);
}
