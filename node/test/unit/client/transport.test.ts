/** The client's transport: retries of 429 and repeatable 503s after Retry-After, bounded; errors. */
import { describe, expect, it } from "vitest";
import { ChronofenceApiError } from "../../../src/client/errors.js";
import { retryAfterMs, Transport } from "../../../src/client/transport.js";

interface Scripted {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** A fetch that answers from a script and records the calls; sleeps are recorded, not waited. */
function scripted(answers: Scripted[], options: { maxRetries?: number } = {}) {
  const calls: Array<{ url: string; init: RequestInit }> = [];
  const sleeps: number[] = [];
  const transport = new Transport({
    url: "http://api.test",
    apiKey: "cfk_test",
    maxRetries: options.maxRetries ?? 3,
    maxRetryDelayMs: 10_000,
    nowMs: () => Date.parse("2030-01-01T00:00:00Z"),
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    fetch: async (url, init) => {
      calls.push({ url: String(url), init: init! });
      const answer = answers.shift() ?? { status: 500 };
      return new Response(answer.body === undefined ? "" : JSON.stringify(answer.body), {
        status: answer.status,
        headers: answer.headers ?? {},
      });
    },
  });
  return { transport, calls, sleeps };
}

const rateLimited = (retryAfter: string) => ({
  status: 429,
  headers: { "Retry-After": retryAfter },
  body: { error: { code: "rate_limited", message: "rate limit exceeded", details: {} } },
});
const unavailable = {
  status: 503,
  body: { error: { code: "unavailable", message: "down", details: {} } },
};

describe("Transport", () => {
  it("retries a 429 after its Retry-After, then answers", async () => {
    const { transport, calls, sleeps } = scripted([
      rateLimited("2"),
      { status: 201, body: { id: "x" } },
    ]);
    const answer = await transport.send({
      method: "POST",
      path: "/v1/tasks",
      body: {},
      repeatable: false,
    });
    expect(answer).toEqual({ id: "x" });
    expect(sleeps).toEqual([2000]);
    expect(calls).toHaveLength(2);
    expect(new Headers(calls[0]!.init.headers).get("authorization")).toBe("Bearer cfk_test");
  });

  it("gives up after maxRetries with the API's status and code", async () => {
    const { transport, calls } = scripted([rateLimited("1"), rateLimited("1"), rateLimited("1")], {
      maxRetries: 2,
    });
    const error = await transport
      .send({ method: "GET", path: "/v1/tasks", repeatable: true })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChronofenceApiError);
    expect(error).toMatchObject({
      status: 429,
      code: "rate_limited",
      message: "rate limit exceeded",
    });
    expect(calls).toHaveLength(3);
  });

  it("retries a 503 only when the call is repeatable, with a backoff when no Retry-After", async () => {
    const once = scripted([unavailable, { status: 200, body: { ok: 1 } }]);
    await once.transport.send({ method: "GET", path: "/v1/tasks/1", repeatable: true });
    expect(once.sleeps).toEqual([250]);
    const never = scripted([unavailable, { status: 201, body: {} }]);
    await expect(
      never.transport.send({ method: "POST", path: "/v1/tasks", body: {}, repeatable: false }),
    ).rejects.toMatchObject({ status: 503, code: "unavailable" });
    expect(never.calls).toHaveLength(1);
  });

  it("caps a long Retry-After at maxRetryDelayMs and reads HTTP dates", async () => {
    const { transport, sleeps } = scripted([rateLimited("3600"), { status: 200, body: {} }]);
    await transport.send({ method: "GET", path: "/", repeatable: true });
    expect(sleeps).toEqual([10_000]);
    const now = Date.parse("2030-01-01T00:00:00Z");
    expect(retryAfterMs("Tue, 01 Jan 2030 00:00:03 GMT", now)).toBe(3000);
    expect(retryAfterMs("soon", now)).toBeNull();
    expect(retryAfterMs(null, now)).toBeNull();
  });

  it("does not retry other errors, and keeps a non-API body readable", async () => {
    const { transport, calls } = scripted([{ status: 502, body: "bad gateway" }]);
    await expect(
      transport.send({ method: "GET", path: "/", repeatable: true }),
    ).rejects.toMatchObject({
      status: 502,
      code: "http_502",
    });
    expect(calls).toHaveLength(1);
  });

  it("reports no answer as status 0, code unreachable", async () => {
    const transport = new Transport({
      url: "http://api.test",
      apiKey: "k",
      fetch: async () => {
        throw new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } });
      },
    });
    await expect(
      transport.send({ method: "GET", path: "/", repeatable: true }),
    ).rejects.toMatchObject({
      status: 0,
      code: "unreachable",
      message: expect.stringContaining("ECONNREFUSED"),
    });
  });

  it("sends query parameters, leaving out undefined ones", async () => {
    const { transport, calls } = scripted([{ status: 200, body: {} }]);
    await transport.send({
      method: "GET",
      path: "/v1/tasks",
      query: { updated_after: "2030-01-01T00:00:00+02:00", type: undefined, limit: 5 },
      repeatable: true,
    });
    expect(calls[0]!.url).toBe(
      "http://api.test/v1/tasks?updated_after=2030-01-01T00%3A00%3A00%2B02%3A00&limit=5",
    );
  });
});
