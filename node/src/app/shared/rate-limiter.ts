import { ChronofenceError, ErrorCode, RateLimitedError } from "../../domain/errors.js";
import type { TenantLimits } from "../../domain/tenant.js";
import { TokenBucket } from "../../domain/token-bucket.js";
import type { Clock } from "../../ports/clock.js";

/**
 * One token bucket per tenant, in this process's memory: no round trip per
 * request. With N API processes a tenant may get up to N times its rate;
 * size the limits accordingly (or shard tenants to processes).
 */
export class RateLimiter {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(private readonly clock: Clock) {}

  /**
   * Takes `tasks` tokens or throws without taking any: RateLimitedError when
   * the bucket is short for now, Unprocessable (`batch_exceeds_burst`) when
   * it can never hold that many — waiting would not help, so no 429.
   */
  take(tenantId: string, limits: TenantLimits, tasks: number): void {
    if (tasks > limits.burst) {
      throw new ChronofenceError(
        ErrorCode.Unprocessable,
        `a request of ${tasks} tasks exceeds the tenant's burst of ${limits.burst}; split it`,
        { details: { rule: "batch_exceeds_burst", tasks, burst: limits.burst } },
      );
    }
    const nowMs = this.clock.monotonicMs();
    let bucket = this.buckets.get(tenantId);
    if (!bucket || bucket.ratePerS !== limits.ratePerS || bucket.burst !== limits.burst) {
      bucket = new TokenBucket(limits.ratePerS, limits.burst, nowMs);
      this.buckets.set(tenantId, bucket);
    }
    const result = bucket.take(tasks, nowMs);
    if (!result.ok) throw new RateLimitedError(result.retryAfterMs, limits.burst, result.remaining);
  }
}
