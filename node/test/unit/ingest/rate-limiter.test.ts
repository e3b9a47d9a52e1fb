import { describe, expect, it } from "vitest";
import { RateLimiter } from "../../../src/app/shared/rate-limiter.js";
import { RateLimitedError } from "../../../src/domain/errors.js";
import { DEFAULT_TENANT_LIMITS } from "../../../src/domain/tenant.js";
import { FakeClock } from "../../support/fake-clock.js";

const limits = { ...DEFAULT_TENANT_LIMITS, ratePerS: 10, burst: 5 };

describe("RateLimiter", () => {
  it("refuses a request larger than the burst as unprocessable, taking no token", () => {
    const limiter = new RateLimiter(new FakeClock());
    let refused: unknown;
    try {
      limiter.take("t", limits, 6);
    } catch (error) {
      refused = error;
    }
    expect(refused).not.toBeInstanceOf(RateLimitedError);
    expect(refused).toMatchObject({
      code: "unprocessable",
      details: { rule: "batch_exceeds_burst", tasks: 6, burst: 5 },
    });
    expect(() => limiter.take("t", limits, 5)).not.toThrow();
  });

  it("answers a request the bucket can hold later with a finite retry time", () => {
    const limiter = new RateLimiter(new FakeClock());
    limiter.take("t", limits, 5);
    try {
      limiter.take("t", limits, 5);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(RateLimitedError);
      expect((error as RateLimitedError).retryAfterMs).toBe(500);
    }
  });
});
