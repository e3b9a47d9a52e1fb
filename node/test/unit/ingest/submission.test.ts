import { describe, expect, it } from "vitest";
import { ChronofenceError } from "../../../src/domain/errors.js";
import {
  submissionLayers,
  TaskSubmission,
  validateBatchEnvelope,
  validateSubmission,
} from "../../../src/domain/submission.js";

const NOW_MS = Date.parse("2030-01-01T00:00:00Z");
const ctx = {
  tenantId: "t-1",
  nowMs: NOW_MS,
  horizonMs: 365 * 86_400_000,
  maxPayloadBytes: 100,
  retryDefaults: {},
  newTaskId: () => "id-1",
};

const codeOf = (input: unknown, index?: number) => {
  try {
    validateSubmission(input, ctx, index);
    return "ok";
  } catch (error) {
    return (error as ChronofenceError).code;
  }
};

describe("validateSubmission", () => {
  it("fills documented defaults", () => {
    const { draft } = validateSubmission({ type: "a" }, ctx);
    expect(draft).toMatchObject({
      id: "id-1",
      tenantId: "t-1",
      payloadJson: "null",
      priority: "standard",
      runAtMs: NOW_MS,
      maxAttempts: 3,
      timeoutMs: 30_000,
      backoff: { strategy: "exponential", baseMs: 1000, maxMs: 3_600_000 },
      idempotencyKey: null,
      createdAtMs: NOW_MS,
    });
  });

  it("resolves delay_ms and run_at against the injected now", () => {
    expect(validateSubmission({ type: "a", delay_ms: 500 }, ctx).draft.runAtMs).toBe(NOW_MS + 500);
    const runAt = "2030-01-02T03:04:05.678+02:00";
    expect(validateSubmission({ type: "a", run_at: runAt }, ctx).draft.runAtMs).toBe(
      Date.parse(runAt),
    );
  });

  it("treats a past run_at as now", () => {
    expect(
      validateSubmission({ type: "a", run_at: "1999-01-01T00:00:00Z" }, ctx).draft.runAtMs,
    ).toBe(NOW_MS);
  });

  it("accepts exactly the horizon and refuses 1 ms more (422)", () => {
    expect(codeOf({ type: "a", delay_ms: ctx.horizonMs })).toBe("ok");
    expect(codeOf({ type: "a", delay_ms: ctx.horizonMs + 1 })).toBe("unprocessable");
  });

  it("separates malformed (400) from invalid (422)", () => {
    expect(codeOf({ type: 1 })).toBe("invalid_request");
    expect(codeOf({ type: "a", extra: 1 })).toBe("invalid_request");
    expect(codeOf("a")).toBe("invalid_request");
    expect(codeOf({ type: "a", max_attempts: 0 })).toBe("unprocessable");
    expect(codeOf({ type: "a", priority: "urgent" })).toBe("unprocessable");
    expect(codeOf({ type: "a", run_at: "2030-01-01T00:00:00Z", delay_ms: 1 })).toBe(
      "unprocessable",
    );
  });

  it("measures the payload in UTF-8 bytes (413 beyond the tenant limit)", () => {
    expect(codeOf({ type: "a", payload: "x".repeat(98) })).toBe("ok"); // 100 bytes with quotes
    expect(codeOf({ type: "a", payload: "x".repeat(99) })).toBe("payload_too_large");
    // 49 two-byte chars + 2 quotes = 100 bytes; 50 = 102 bytes though only 52 UTF-16 units.
    expect(codeOf({ type: "a", payload: "é".repeat(49) })).toBe("ok");
    expect(codeOf({ type: "a", payload: "é".repeat(50) })).toBe("payload_too_large");
    expect(codeOf({ type: "a", payload: "😀".repeat(25) })).toBe("payload_too_large");
  });

  it("rejects deep and non-finite payloads without overflowing the stack", () => {
    const deep = JSON.parse(`${"[".repeat(100_000)}${"]".repeat(100_000)}`);
    expect(codeOf({ type: "a", payload: deep })).toBe("unprocessable");
    expect(codeOf({ type: "a", payload: { n: Infinity } })).toBe("unprocessable");
  });

  it("refuses NUL and lone surrogates that jsonb cannot store, in values and keys (422)", () => {
    const detailsOf = (payload: unknown, index?: number) => {
      try {
        validateSubmission({ type: "a", payload }, ctx, index);
        return "ok";
      } catch (error) {
        expect((error as ChronofenceError).code).toBe("unprocessable");
        return (error as ChronofenceError).details;
      }
    };
    expect(detailsOf("a\u0000b")).toMatchObject({ rule: "unsupported_unicode", path: "$" });
    expect(detailsOf({ k: ["x", "\ud800"] })).toMatchObject({
      rule: "unsupported_unicode",
      path: "$.k[1]",
    });
    expect(detailsOf({ k: "\udc00x" })).toMatchObject({ rule: "unsupported_unicode" });
    expect(detailsOf({ "\u0000": 1 })).toMatchObject({
      rule: "unsupported_unicode",
      path: '$["\\u0000"]',
    });
    expect(detailsOf({ a: { "k\ud83d": 1 } }, 4)).toMatchObject({
      index: 4,
      rule: "unsupported_unicode",
    });
    // A well-formed pair is one character, and fine.
    expect(detailsOf({ "😀": "😀", s: "\ud83d\ude00" })).toBe("ok");
  });

  it("refuses a backoff whose base exceeds its max (422), counting the default max", () => {
    const backoff = (b: object) => codeOf({ type: "a", backoff: b });
    expect(backoff({ base_ms: 10, max_ms: 10 })).toBe("ok");
    expect(backoff({ base_ms: 11, max_ms: 10 })).toBe("unprocessable");
    expect(backoff({ base_ms: 3_600_001 })).toBe("unprocessable");
    expect(backoff({ max_ms: 999 })).toBe("unprocessable");
  });

  it("accepts RFC 3339's lowercase t and z", () => {
    const { draft } = validateSubmission({ type: "a", run_at: "2030-01-02t03:04:05.5z" }, ctx);
    expect(draft.runAtMs).toBe(Date.parse("2030-01-02T03:04:05.5Z"));
    expect(codeOf({ type: "a", run_at: "2030-01-02t03:04:05+01:00" })).toBe("ok");
  });

  it("names the batch item in error details", () => {
    let thrown: unknown = null;
    try {
      validateSubmission({ type: 1 }, ctx, 7);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ChronofenceError);
    expect((thrown as ChronofenceError).details).toMatchObject({ index: 7 });
  });

  it("hashes the same body to the same canonical request whatever the whitespace", () => {
    const a = validateSubmission(
      JSON.parse('{ "type": "a", "idempotency_key": "k",  "payload": {"x": 1} }'),
      ctx,
    );
    const b = validateSubmission(
      JSON.parse('{"type":"a","idempotency_key":"k","payload":{"x":1}}'),
      ctx,
    );
    expect(a.canonicalRequest).toBe(b.canonicalRequest);
    expect(validateSubmission({ type: "a" }, ctx).canonicalRequest).toBeNull();
  });

  it("canonicalises key order and explicit defaults, and still tells different requests apart", () => {
    const canonical = (body: object) =>
      validateSubmission({ idempotency_key: "k", ...body }, ctx).canonicalRequest;
    const base = canonical({ type: "a", payload: { x: 1, y: { p: [1, { b: 2, a: 1 }] } } });
    expect(canonical({ payload: { y: { p: [1, { a: 1, b: 2 }] }, x: 1 }, type: "a" })).toBe(base);
    expect(
      canonical({
        type: "a",
        payload: { x: 1, y: { p: [1, { b: 2, a: 1 }] } },
        priority: "standard",
        max_attempts: 3,
        timeout_ms: 30_000,
        delay_ms: 0,
        backoff: { max_ms: 3_600_000, strategy: "exponential" },
      }),
    ).toBe(base);
    expect(canonical({ type: "a", payload: { x: 1, y: { p: [{ b: 2, a: 1 }, 1] } } })).not.toBe(
      base,
    );
    expect(
      canonical({ type: "a", payload: { x: 1, y: { p: [1, { b: 2, a: 1 }] } }, priority: "bulk" }),
    ).not.toBe(base);
    expect(canonical({ type: "a" })).toBe(canonical({ type: "a", payload: null }));
    expect(canonical({ type: "a", run_at: "2030-01-01T10:00:00Z" })).toBe(
      canonical({ type: "a", run_at: "2030-01-01T11:00:00.000+01:00" }),
    );
    expect(canonical({ type: "a", run_at: "2030-01-01T10:00:00Z" })).not.toBe(
      canonical({ type: "a", delay_ms: 36_000_000 }),
    );
  });
});

describe("the one-pass parse of a submission", () => {
  // Values of each field: valid ones, and of the wrong type or out of range.
  const FIELD_VALUES: Record<string, unknown[]> = {
    type: ["send", "a.b:c/d-e_f", "", "x".repeat(129), "bad type", 7, null],
    payload: [{ a: 1 }, [1, 2], "text", null, 3],
    run_at: ["2030-01-02T00:00:00Z", "2030-01-02t00:00:00z", "2030-01-02", "soon", 5],
    delay_ms: [0, 1500, -1, 1.5, "10"],
    priority: ["critical", "bulk", "urgent", 1],
    idempotency_key: ["k-1", "", "with space", "x".repeat(256), 9],
    max_attempts: [1, 5, 0, 1000, 2.5, "3"],
    timeout_ms: [1, 86_400_000, 0, 86_400_001, "1"],
    backoff: [
      {},
      { strategy: "fixed", base_ms: 10 },
      { strategy: "nope" },
      { base_ms: -1 },
      { other: 1 },
      "x",
    ],
    unknown_field: [1],
  };
  const FIELDS = Object.keys(FIELD_VALUES);

  it("accepts exactly what the shape and then the rules accept, over 3,000 generated submissions", () => {
    let seed = 20261202;
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const pick = <T>(values: readonly T[]) => values[Math.floor(next() * values.length)]!;
    const verdicts = { accepted: 0, malformed: 0, invalid: 0 };
    for (let n = 0; n < 3000; n++) {
      const input: Record<string, unknown> = {};
      for (const field of FIELDS)
        if (next() < (field === "unknown_field" ? 0.05 : 0.4))
          input[field] = pick(FIELD_VALUES[field]!);
      if (next() < 0.9 && input.type === undefined) input.type = "send";
      const shaped = submissionLayers.shape.safeParse(input);
      const layered = shaped.success && submissionLayers.rules.safeParse(shaped.data).success;
      expect(TaskSubmission.safeParse(input).success, JSON.stringify(input)).toBe(layered);
      verdicts[layered ? "accepted" : shaped.success ? "invalid" : "malformed"]++;
    }
    // The generator reaches all three outcomes, often.
    for (const count of Object.values(verdicts)) expect(count).toBeGreaterThan(150);
  });
});

describe("validateBatchEnvelope", () => {
  it("accepts 1..1000 items", () => {
    expect(validateBatchEnvelope({ tasks: [{}] })).toHaveLength(1);
    expect(() => validateBatchEnvelope({ tasks: [] })).toThrow(/1 to 1000/);
    expect(() => validateBatchEnvelope({ tasks: new Array(1001).fill({}) })).toThrow(/1 to 1000/);
    expect(() => validateBatchEnvelope([{}])).toThrow(ChronofenceError);
  });
});
