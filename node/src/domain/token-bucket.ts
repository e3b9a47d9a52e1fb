/**
 * A token bucket per tenant: `ratePerS` tokens flow in per second up to
 * `burst`. One task costs one token, so a batch of 100 costs 100. Pure: the
 * caller passes `nowMs` (monotonic), so tests drive it with a fake clock.
 */
export interface TakeResult {
  ok: boolean;
  remaining: number;
  /** Milliseconds until `cost` tokens will be available (0 when ok). */
  retryAfterMs: number;
}

export class TokenBucket {
  private tokens: number;
  private updatedMs: number;

  constructor(
    readonly ratePerS: number,
    readonly burst: number,
    nowMs: number,
  ) {
    this.tokens = burst;
    this.updatedMs = nowMs;
  }

  take(cost: number, nowMs: number): TakeResult {
    this.refill(nowMs);
    if (cost <= this.tokens) {
      this.tokens -= cost;
      return { ok: true, remaining: Math.floor(this.tokens), retryAfterMs: 0 };
    }
    return { ok: false, remaining: Math.floor(this.tokens), retryAfterMs: this.msUntil(cost) };
  }

  private refill(nowMs: number): void {
    // A clock that steps backwards must not mint or burn tokens.
    const elapsedMs = Math.max(0, nowMs - this.updatedMs);
    this.tokens = Math.min(this.burst, this.tokens + (elapsedMs * this.ratePerS) / 1000);
    this.updatedMs = Math.max(this.updatedMs, nowMs);
  }

  private msUntil(cost: number): number {
    if (cost > this.burst || this.ratePerS <= 0) return Number.POSITIVE_INFINITY;
    return Math.ceil(((cost - this.tokens) * 1000) / this.ratePerS);
  }
}
