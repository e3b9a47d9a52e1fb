import { RateLimitedError } from "../domain/errors.js";
import type { TenantLimits } from "../domain/tenant.js";
import { TokenBucket } from "../domain/token-bucket.js";
import type { Clock } from "../ports/clock.js";

/**
 * One token bucket per tenant, in this process's memory: no round trip per
 * request. With N API processes a tenant may get up to N times its rate;
 * size the limits accordingly (or shard tenants to processes).
 */
export class RateLimiter {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(private readonly clock: Clock) {}

  /** Takes `tasks` tokens or throws RateLimitedError without taking any. */
  take(tenantId: string, limits: TenantLimits, tasks: number): void {
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
