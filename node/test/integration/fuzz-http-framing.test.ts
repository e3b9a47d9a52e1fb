/**
 * HTTP at the socket level (support/raw-http.ts): broken framing and
 * request smuggling, pipelined requests, duplicate JSON keys and slowloris
 * clients. For each: a 4xx or a close by the server (never a 5xx, never
 * silence), nothing stored for a request that was refused or got no answer,
 * and the API still serves a valid request afterwards. What the server
 * promises is in docs/api.md ("HTTP framing"); the reasons are in the
 * header of adapters/http/server.ts and framing.ts.
 *
 * Each test is independent of the others: it names its own task types and
 * checks the rows of those only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiFixture, call, startApiFixture } from "./support/api.js";
import { portOf } from "./support/fuzz.js";
import { errorCodeOf, type RawAnswer, rawRequest, trickle } from "./support/raw-http.js";

const REQUEST_TIMEOUT_MS = 1500;
/** uWS closes a connection whose request line and headers are not complete by then (HTTP_IDLE_TIMEOUT_S, checked every 4 s). */
const UWS_IDLE_TIMEOUT_MS = 10_000 + 4_000;

let fixture: ApiFixture;
let port: number;
let auth: string;

beforeAll(async () => {
  fixture = await startApiFixture(
    { requestTimeoutMs: REQUEST_TIMEOUT_MS },
    { ratePerS: 1e9, burst: 1e9 },
  );
  port = portOf(fixture.api);
  auth = `Authorization: Bearer ${fixture.tenant.apiKey}\r\n`;
});

afterAll(async () => {
  await fixture?.stop();
});

const post = (body: string, headers: string) =>
  `POST /v1/tasks HTTP/1.1\r\nHost: fuzz\r\n${auth}${headers}\r\n${body}`;
const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;

async function tasksOfType(prefix: string): Promise<Array<{ type: string; payload: unknown }>> {
  return fixture.withDb(async (db) => {
    const found = await db.query(
      "SELECT type, payload, max_attempts, idempotency_key FROM tasks WHERE type LIKE $1 ORDER BY type",
      [`${prefix}%`],
    );
    return found.rows;
  });
}

async function servesAValidTask(): Promise<void> {
  expect((await call(fixture.api.baseUrl, "GET", "/healthz")).status).toBe(200);
  const ok = await call(fixture.api.baseUrl, "POST", "/v1/tasks", {
    key: fixture.tenant.apiKey,
    body: { type: "framing.after" },
  });
  expect(ok.status).toBe(201);
}

/** A 4xx status line arrived (whatever happened to the connection after). */
const is4xx = ({ status }: RawAnswer) => status !== null && status >= 400 && status < 500;
/** A 4xx, or the server closed without a word; silence until our timeout fails. */
const closedOr4xx = (a: RawAnswer) => is4xx(a) || (a.status === null && a.closed && !a.timedOut);
/** A 4xx, and then the server closed the connection. */
const refusedAndClosed = (a: RawAnswer) => is4xx(a) && a.closed && !a.timedOut;

describe("fuzz: HTTP framing", () => {
  it("refuses ambiguous framing (request smuggling) with 400 and a close, and never serves the bytes after it", async () => {
    const body = '{"type":"smuggle.body"}';
    // A whole request hidden where a proxy framing by the other length would see a body.
    const hidden = post('{"type":"smuggle.hidden"}', "Content-Length: 25\r\n");
    const cases: Array<[string, string, RawAnswerCheck]> = [
      [
        "CL then TE",
        post(body, `Content-Length: ${body.length}\r\nTransfer-Encoding: chunked\r\n`),
        refusedAndClosed,
      ],
      [
        "TE then CL",
        post(`${chunk(body)}0\r\n\r\n`, "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n"),
        refusedAndClosed,
      ],
      [
        "two Content-Lengths",
        post(body, `Content-Length: ${body.length}\r\nContent-Length: 5\r\n`),
        framingRefusal("duplicate_content_length"),
      ],
      [
        "two equal Content-Lengths",
        post(body, `Content-Length: ${body.length}\r\nContent-Length: ${body.length}\r\n`),
        framingRefusal("duplicate_content_length"),
      ],
      // uWS frames by the first (0), so `hidden` would be a request of its own.
      [
        "two Content-Lengths hiding a request",
        post(hidden, `Content-Length: 0\r\nContent-Length: ${hidden.length}\r\n`),
        closedOr4xx,
      ],
      [
        "Content-Length list",
        post(body, `Content-Length: ${body.length}, ${body.length}\r\n`),
        refusedAndClosed,
      ],
      [
        "signed Content-Length",
        post(body, `Content-Length: +${body.length}\r\n`),
        refusedAndClosed,
      ],
      ["negative Content-Length", post(body, "Content-Length: -1\r\n"), refusedAndClosed],
      [
        "xchunked",
        post(`${chunk(body)}0\r\n\r\n`, "Transfer-Encoding: xchunked\r\n"),
        framingRefusal("unsupported_transfer_encoding"),
      ],
      [
        "gzip, chunked",
        post(`${chunk(body)}0\r\n\r\n`, "Transfer-Encoding: gzip, chunked\r\n"),
        framingRefusal("unsupported_transfer_encoding"),
      ],
      [
        "chunked, chunked",
        post(`${chunk(body)}0\r\n\r\n`, "Transfer-Encoding: chunked, chunked\r\n"),
        framingRefusal("unsupported_transfer_encoding"),
      ],
      [
        "two Transfer-Encodings",
        post(
          `${chunk(body)}0\r\n\r\n`,
          "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        ),
        framingRefusal("duplicate_transfer_encoding"),
      ],
      [
        "identity",
        post(body, `Transfer-Encoding: identity\r\nContent-Length: ${body.length}\r\n`),
        refusedAndClosed,
      ],
      [
        "chunked hiding a request after its end",
        post(`0\r\n\r\n${hidden}`, "Transfer-Encoding: xchunked\r\n"),
        closedOr4xx,
      ],
      [
        "chunk size not hex",
        post("zz\r\n{}\r\n0\r\n\r\n", "Transfer-Encoding: chunked\r\n"),
        refusedAndClosed,
      ],
      [
        "negative chunk size",
        post(`-1\r\n${body}\r\n0\r\n\r\n`, "Transfer-Encoding: chunked\r\n"),
        refusedAndClosed,
      ],
      [
        "chunk size overflowing 64 bits",
        post(`ffffffffffffffffffff\r\n${body}\r\n0\r\n\r\n`, "Transfer-Encoding: chunked\r\n"),
        refusedAndClosed,
      ],
      [
        "chunk shorter than its size",
        post(`2\r\n${body}\r\n0\r\n\r\n`, "Transfer-Encoding: chunked\r\n"),
        refusedAndClosed,
      ],
    ];
    const results = await Promise.all(
      cases.map(async ([name, data, check]) => {
        const answer = await rawRequest(port, data, { untilClosed: true, timeoutMs: 10_000 });
        return {
          name,
          ok: check(answer),
          status: answer.status,
          closed: answer.closed,
          received: answer.received.slice(0, 300),
        };
      }),
    );
    expect(results.filter((r) => !r.ok)).toEqual([]);
    expect(await tasksOfType("smuggle."), "a refused request or a smuggled one was stored").toEqual(
      [],
    );
    await servesAValidTask();
  }, 60_000);

  it("answers pipelined requests in order, never mixed up; uWS closes a connection pipelining past an unanswered request, and nothing it aborted is acted on", async () => {
    // Answered at once (no await in the route), so uWS serves them one after another.
    const sync = await rawRequest(
      port,
      "GET /nope-1 HTTP/1.1\r\nHost: a\r\n\r\nPUT /v1/tasks HTTP/1.1\r\nHost: a\r\n\r\nGET /nope-3 HTTP/1.1\r\nHost: a\r\n\r\n",
      { untilResponses: 3, timeoutMs: 10_000 },
    );
    expect(sync.responses.map((r) => [r.status, errorCodeOf(r.body)])).toEqual([
      [404, "route_not_found"],
      [405, "method_not_allowed"],
      [404, "route_not_found"],
    ]);
    // The key cached, so a POST is admitted at once, in the same read as its follower.
    expect(
      (await call(fixture.api.baseUrl, "GET", "/v1/tasks?limit=1", { key: fixture.tenant.apiKey }))
        .status,
    ).toBe(200);
    // Answered after an await: the second request arrives while the first is unanswered, and
    // uWS closes the connection (it refuses async pipelining rather than risk mixing answers).
    const one = (type: string) =>
      post(`{"type":"${type}"}`, `Content-Length: ${type.length + 11}\r\n`);
    const health = "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n";
    const writes = [
      [health, one("pipeline.a"), health],
      [one("pipeline.b"), health],
      [one("pipeline.c"), one("pipeline.d"), one("pipeline.e")],
    ];
    for (const requests of writes) {
      const answer = await rawRequest(port, requests.join(""), {
        untilClosed: true,
        timeoutMs: 10_000,
      });
      expect(answer.closed && !answer.timedOut, `closed: ${JSON.stringify(answer.received)}`).toBe(
        true,
      );
      // Whatever was answered is answered in order: each status is its own request's.
      const expected = requests.map((r) => (r === health ? 200 : 201));
      expect(answer.responses.map((r) => r.status)).toEqual(
        expected.slice(0, answer.responses.length),
      );
    }
    // No answer arrived for any of them (uWS closed at the second request of each write),
    // so none may have been acted on: their handlers had not started yet.
    expect(await tasksOfType("pipeline."), "a pipelined request aborted by uWS was stored").toEqual(
      [],
    );
    await servesAValidTask();
  }, 60_000);

  it("keeps the last of duplicate JSON keys, as validation saw them, in what it stores", async () => {
    const submit = (body: string, path = "/v1/tasks") =>
      call(fixture.api.baseUrl, "POST", path, { key: fixture.tenant.apiKey, rawBody: body });
    const accepted = [
      '{"type":"dup.first","type":"dup.a1"}',
      '{"type":"dup.a2","payload":{"k":1,"k":2}}',
      '{"type":"dup.a3","delay_ms":-1,"delay_ms":1000}',
      '{"type":"dup.a4","max_attempts":0,"max_attempts":2}',
      '{"type":"dup.a5","idempotency_key":"first","idempotency_key":"last"}',
      '{"type":"dup.a6","payload":{"__proto__":1,"__proto__":{"x":2}}}',
    ];
    for (const body of accepted) {
      const answer = await submit(body);
      expect(answer.status, body).toBe(201);
    }
    const batch = await submit(
      '{"tasks":[{"type":"dup.refused"}],"tasks":[{"type":"dup.a7"}]}',
      "/v1/tasks/batch",
    );
    expect(batch.status).toBe(201);
    expect(batch.body.tasks).toHaveLength(1);
    const refused: Array<[string, number]> = [
      ['{"type":"dup.r1","type":1}', 400],
      ['{"type":1,"type":"dup.r2"}', 201], // the last wins: this one is valid
      ['{"type":"dup.r3","delay_ms":1000,"delay_ms":-1}', 422],
      ['{"type":"dup.r4","max_attempts":2,"max_attempts":0}', 422],
      ['{"type":"dup.r5","payload":"ok","payload":"\\u0000"}', 422],
    ];
    for (const [body, status] of refused) {
      const answer = await submit(body);
      expect(answer.status, body).toBe(status);
      if (status >= 400) expect(typeof answer.body.error.code, body).toBe("string");
    }
    const rows = await tasksOfType("dup.");
    expect(rows.map((r) => r.type)).toEqual([
      "dup.a1",
      "dup.a2",
      "dup.a3",
      "dup.a4",
      "dup.a5",
      "dup.a6",
      "dup.a7",
      "dup.r2",
    ]);
    const byType = new Map(rows.map((r) => [r.type, r as Record<string, unknown>]));
    expect(byType.get("dup.a2")!.payload).toEqual({ k: 2 });
    expect(byType.get("dup.a4")!.max_attempts).toBe(2);
    expect(byType.get("dup.a5")!.idempotency_key).toBe("last");
    expect(JSON.stringify(byType.get("dup.a6")!.payload)).toBe('{"__proto__":{"x":2}}');
    await servesAValidTask();
  }, 60_000);

  it("times out slowloris clients (headers or body trickled byte by byte) and stays responsive to others", async () => {
    const startedMs = performance.now();
    const requestLine = "GET /healthz HTTP/1.1\r\n";
    const headers = `${requestLine}Host: a\r\nX-Slow: ${"s".repeat(400)}\r\n\r\n`;
    const body = `{"type":"slowloris.body","payload":"${"b".repeat(200)}"}`;
    const slowPost = post(body, `Content-Length: ${body.length}\r\n`);
    const options = { untilClosed: true, timeoutMs: 3 * UWS_IDLE_TIMEOUT_MS };
    const slowLines = Array.from({ length: 20 }, () => trickle(port, headers, 250, options));
    const slowHeaders = Array.from({ length: 40 }, () =>
      trickle(port, headers, 250, { ...options, atOnceBytes: requestLine.length }),
    );
    const slowBodies = Array.from({ length: 40 }, () =>
      trickle(port, slowPost, 50, { ...options, atOnceBytes: slowPost.length - body.length }),
    );
    // While all 100 are trickling, others are served.
    const during = await call(fixture.api.baseUrl, "POST", "/v1/tasks", {
      key: fixture.tenant.apiKey,
      body: { type: "slowloris.served" },
    });
    const servedAfterMs = performance.now() - startedMs;
    expect(during.status).toBe(201);
    const [lineAnswers, headerAnswers, bodyAnswers] = [
      await Promise.all(slowLines),
      await Promise.all(slowHeaders),
      await Promise.all(slowBodies),
    ];
    const seen = (a: RawAnswer & { sentBytes: number }) => ({
      closed: a.closed,
      timedOut: a.timedOut,
      status: a.status,
      code: errorCodeOf(a.responses[0]?.body ?? ""),
      cut: a.sentBytes < (a.status === 408 ? slowPost.length : headers.length),
    });
    // A request line split over several reads is refused by uWS itself (505, then a close):
    // it parses the version from the first read alone. So a trickled request line is cut at once.
    for (const a of lineAnswers) {
      expect(seen(a)).toEqual({
        closed: true,
        timedOut: false,
        status: 505,
        code: null,
        cut: true,
      });
    }
    // The request line whole, the headers trickled: uWS closes at its idle timeout, without a word.
    for (const a of headerAnswers) {
      expect(seen(a)).toEqual({
        closed: true,
        timedOut: false,
        status: null,
        code: null,
        cut: true,
      });
    }
    // Headers complete, body trickled: our request deadline answers 408 and closes.
    for (const a of bodyAnswers) {
      expect(seen(a)).toEqual({
        closed: true,
        timedOut: false,
        status: 408,
        code: "request_timeout",
        cut: true,
      });
    }
    expect(servedAfterMs, "a valid request waited for the slow clients").toBeLessThan(
      UWS_IDLE_TIMEOUT_MS,
    );
    expect((await tasksOfType("slowloris.")).map((r) => r.type)).toEqual(["slowloris.served"]);
    await servesAValidTask();
  }, 120_000);

  it("survives broken request lines and header floods: a 4xx or a close, never silence", async () => {
    const flood = Array.from({ length: 500 }, (_, i) => `X-Flood-${i}: ${"v".repeat(20)}`).join(
      "\r\n",
    );
    const cases: Array<[string, string, RawAnswerCheck]> = [
      ["bad Content-Length", post("{}", "Content-Length: abc\r\n"), is4xx],
      // Our request deadline (1.5 s here) answers 408 and closes.
      ["body shorter than Content-Length", post('{"type"', "Content-Length: 100\r\n"), is4xx],
      ["Content-Length over the limit", post("{", "Content-Length: 999999999\r\n"), is4xx],
      // uWS answers a request line that is not HTTP/1.1 with 505 itself.
      [
        "non-HTTP bytes",
        "\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u0000\u00a1\u0003\u0003",
        (a) => closedOr4xx(a) || a.status === 505,
      ],
      [
        "bare LF line ends",
        "GET /healthz HTTP/1.1\nHost: a\n\n",
        (a) => closedOr4xx(a) || a.status === 505,
      ],
      ["header flood", `GET /healthz HTTP/1.1\r\nHost: a\r\n${flood}\r\n\r\n`, closedOr4xx],
      // uWS answers nothing to these and closes the connection at its idle timeout.
      ["missing Host", "GET /healthz HTTP/1.1\r\n\r\n", closedOr4xx],
      [
        "space before the colon",
        "GET /healthz HTTP/1.1\r\nHost: a\r\nContent-Length : 0\r\n\r\n",
        closedOr4xx,
      ],
      [
        "obsolete line folding",
        post("{}", "Content-Length: 2\r\nX-Folded: a\r\n b\r\n"),
        closedOr4xx,
      ],
    ];
    const results = await Promise.all(
      Array.from({ length: 10 }, () => cases)
        .flat()
        .map(async ([name, data, accept]) => {
          const answer = await rawRequest(port, data, { timeoutMs: 3 * UWS_IDLE_TIMEOUT_MS });
          return {
            name,
            status: answer.status,
            closed: answer.closed,
            timedOut: answer.timedOut,
            ok: accept(answer),
          };
        }),
    );
    expect(results.filter((r) => !r.ok)).toEqual([]);
    await servesAValidTask();
  }, 120_000);
});

type RawAnswerCheck = (answer: RawAnswer) => boolean;

/** Our own 400 for ambiguous framing, naming why, then a close. */
function framingRefusal(reason: string): RawAnswerCheck {
  return (a) => {
    const first = a.responses[0];
    if (first?.status !== 400 || !a.closed || a.timedOut) return false;
    const details = (
      JSON.parse(first.body) as { error: { code: string; details: { reason: string } } }
    ).error;
    return details.code === "invalid_request" && details.details.reason === reason;
  };
}
