import { describe, expect, it } from "vitest";
import type { ChronofenceError } from "../../../src/domain/errors.js";
import {
  GLOBAL_RETRY_DEFAULTS,
  resolveRetryPolicy,
  tenantRetryDefaultsProblems,
} from "../../../src/domain/retry-defaults.js";
import { validateScheduleCreate } from "../../../src/domain/schedule.js";
import { validateSubmission } from "../../../src/domain/submission.js";

const tenant = { maxAttempts: 7, backoffBaseMs: 200, backoffMaxMs: 5000 };

describe("resolveRetryPolicy", () => {
  it("takes the task's value, else the tenant's default, else the global default", () => {
    const policy = (requested: object, defaults: object) => {
      const resolved = resolveRetryPolicy(requested, defaults);
      if (!resolved.ok) throw new Error(resolved.message);
      return resolved.policy;
    };
    expect(policy({}, {})).toEqual({
      maxAttempts: GLOBAL_RETRY_DEFAULTS.maxAttempts,
      backoff: {
        strategy: "exponential",
        baseMs: GLOBAL_RETRY_DEFAULTS.backoffBaseMs,
        maxMs: GLOBAL_RETRY_DEFAULTS.backoffMaxMs,
      },
    });
    expect(policy({}, tenant)).toEqual({
      maxAttempts: 7,
      backoff: { strategy: "exponential", baseMs: 200, maxMs: 5000 },
    });
    expect(policy({ maxAttempts: 2, backoff: { strategy: "fixed", baseMs: 10 } }, tenant)).toEqual({
      maxAttempts: 2,
      backoff: { strategy: "fixed", baseMs: 10, maxMs: 5000 },
    });
    // Field by field: a tenant that sets only max_attempts keeps the global backoff.
    expect(policy({ backoff: { maxMs: 60_000 } }, { maxAttempts: 9 })).toEqual({
      maxAttempts: 9,
      backoff: { strategy: "exponential", baseMs: 1000, maxMs: 60_000 },
    });
  });

  it("refuses a base above the max it meets, naming where each came from", () => {
    expect(resolveRetryPolicy({ backoff: { baseMs: 6000 } }, tenant)).toEqual({
      ok: false,
      message: "backoff.base_ms (6000) must not exceed backoff.max_ms (5000, the tenant's default)",
    });
    expect(resolveRetryPolicy({ backoff: { maxMs: 100 } }, tenant)).toMatchObject({ ok: false });
    expect(resolveRetryPolicy({ backoff: { maxMs: 999 } }, {})).toEqual({
      ok: false,
      message: "backoff.base_ms (1000, the default) must not exceed backoff.max_ms (999)",
    });
  });
});

describe("tenantRetryDefaultsProblems", () => {
  it("holds tenant defaults to a task's ranges, and to a base that fits the max it will meet", () => {
    expect(tenantRetryDefaultsProblems({})).toEqual([]);
    expect(tenantRetryDefaultsProblems(tenant)).toEqual([]);
    expect(tenantRetryDefaultsProblems({ maxAttempts: 0 })).toHaveLength(1);
    expect(tenantRetryDefaultsProblems({ maxAttempts: 1.5 })).toHaveLength(1);
    expect(tenantRetryDefaultsProblems({ backoffMaxMs: 8 * 86_400_000 })).toHaveLength(1);
    // No max of its own: the global max (1 h) is what its base will meet.
    expect(tenantRetryDefaultsProblems({ backoffBaseMs: 7_200_000 })).toEqual([
      "backoff.base_ms (7200000, the tenant's default) must not exceed backoff.max_ms (3600000, the default)",
    ]);
  });
});

describe("tenant defaults at submission", () => {
  const ctx = {
    tenantId: "t-1",
    nowMs: 0,
    horizonMs: 86_400_000,
    maxPayloadBytes: 100,
    retryDefaults: tenant,
    newTaskId: () => "id-1",
  };

  it("fill what a task leaves out; what it names wins", () => {
    expect(validateSubmission({ type: "a" }, ctx).draft).toMatchObject({
      maxAttempts: 7,
      backoff: { strategy: "exponential", baseMs: 200, maxMs: 5000 },
    });
    const own = validateSubmission(
      { type: "a", max_attempts: 1, backoff: { base_ms: 50, max_ms: 60 } },
      ctx,
    ).draft;
    expect(own).toMatchObject({ maxAttempts: 1, backoff: { baseMs: 50, maxMs: 60 } });
  });

  it("answer 422 for a base above the tenant's default max", () => {
    try {
      validateSubmission({ type: "a", backoff: { base_ms: 6000 } }, ctx, 3);
      expect.unreachable();
    } catch (error) {
      expect((error as ChronofenceError).code).toBe("unprocessable");
      expect((error as ChronofenceError).details).toMatchObject({
        index: 3,
        issues: [{ path: "backoff.base_ms" }],
      });
    }
  });

  it("count in the idempotency comparison as the values the task will run with", () => {
    const canonical = (body: object, retryDefaults: object) =>
      validateSubmission({ type: "a", idempotency_key: "k", ...body }, { ...ctx, retryDefaults })
        .canonicalRequest;
    expect(canonical({}, tenant)).toBe(canonical({ max_attempts: 7 }, tenant));
    expect(canonical({}, tenant)).not.toBe(canonical({}, {}));
  });

  it("fill a schedule's task fields too, and a partial backoff of one", () => {
    const limits = { maxPayloadBytes: 100, retryDefaults: tenant };
    const body = { name: "n", expression: "* * * * *", type: "a" };
    expect(validateScheduleCreate(body, limits).spec).toMatchObject({
      maxAttempts: 7,
      backoff: { strategy: "exponential", baseMs: 200, maxMs: 5000 },
    });
    const partial = validateScheduleCreate({ ...body, backoff: { strategy: "fixed" } }, limits);
    expect(partial.spec.backoff).toEqual({ strategy: "fixed", baseMs: 200, maxMs: 5000 });
  });
});
