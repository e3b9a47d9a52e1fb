/**
 * Which retry policy a new task gets. Each of max_attempts, backoff.base_ms
 * and backoff.max_ms comes from the first of:
 *   1. the request (the task, workflow node or schedule names it);
 *   2. the tenant's default (`tenants.default_*`, set when the tenant is
 *      created; absent = no default of its own);
 *   3. the global default below.
 * The result is written into the task row at submission, so the row stays
 * the only thing a worker or the reconciler reads; a tenant default set
 * later does not change tasks already submitted.
 */
import type { BackoffPolicy, BackoffStrategy } from "./task.js";

export interface RetryDefaults {
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
}

export const GLOBAL_RETRY_DEFAULTS: RetryDefaults = {
  maxAttempts: 3,
  backoffBaseMs: 1000,
  backoffMaxMs: 3_600_000,
};

/** A tenant's own defaults; an absent one falls back to the global default. */
export type TenantRetryDefaults = Partial<RetryDefaults>;

/** The ranges a task accepts, which a tenant default must also respect. */
export const RETRY_LIMITS = {
  maxAttempts: { min: 1, max: 100 },
  backoffBaseMs: { min: 1, max: 86_400_000 },
  backoffMaxMs: { min: 1, max: 7 * 86_400_000 },
} as const satisfies Record<keyof RetryDefaults, { min: number; max: number }>;

/** What a request names of its retry policy (each field already range-checked). */
export interface RequestedRetry {
  maxAttempts?: number | undefined;
  backoff?:
    | {
        strategy?: BackoffStrategy | undefined;
        baseMs?: number | undefined;
        maxMs?: number | undefined;
      }
    | undefined;
}

export interface RetryPolicy {
  maxAttempts: number;
  backoff: BackoffPolicy;
}

export type ResolvedRetry =
  | { ok: true; policy: RetryPolicy }
  /** The resolved base exceeds the resolved max; `message` says where each came from. */
  | { ok: false; message: string };

export function resolveRetryPolicy(
  requested: RequestedRetry,
  tenant: TenantRetryDefaults,
): ResolvedRetry {
  const pick = (key: keyof RetryDefaults, own: number | undefined) =>
    own !== undefined
      ? { value: own, from: "" }
      : tenant[key] !== undefined
        ? { value: tenant[key], from: ", the tenant's default" }
        : { value: GLOBAL_RETRY_DEFAULTS[key], from: ", the default" };
  const maxAttempts = pick("maxAttempts", requested.maxAttempts).value;
  const base = pick("backoffBaseMs", requested.backoff?.baseMs);
  const max = pick("backoffMaxMs", requested.backoff?.maxMs);
  if (base.value > max.value) {
    return {
      ok: false,
      message:
        `backoff.base_ms (${base.value}${base.from}) must not exceed ` +
        `backoff.max_ms (${max.value}${max.from})`,
    };
  }
  const strategy = requested.backoff?.strategy ?? "exponential";
  return {
    ok: true,
    policy: { maxAttempts, backoff: { strategy, baseMs: base.value, maxMs: max.value } },
  };
}

/**
 * Checks a tenant's defaults: each within the range a task accepts, and a
 * base that can hold with the max it will meet (its own max, or the global
 * one), so tasks that name neither are never refused. Answers the problems.
 */
export function tenantRetryDefaultsProblems(defaults: TenantRetryDefaults): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(RETRY_LIMITS) as Array<keyof RetryDefaults>) {
    const value = defaults[key];
    const { min, max } = RETRY_LIMITS[key];
    if (value !== undefined && !(Number.isInteger(value) && value >= min && value <= max)) {
      problems.push(`${key} must be an integer from ${min} to ${max}, got ${value}`);
    }
  }
  const resolved = resolveRetryPolicy({}, defaults);
  if (!resolved.ok) problems.push(resolved.message);
  return problems;
}
