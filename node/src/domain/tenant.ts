import type { Scope } from "./api-keys.js";
import type { TenantRetryDefaults } from "./retry-defaults.js";

/** Who is calling, as established from an API key. */
export interface Principal {
  tenantId: string;
  apiKeyId: string;
  limits: TenantLimits;
  /** What the key may do (domain/scopes.ts). */
  scopes: readonly Scope[];
}

export interface TenantLimits {
  /** Tasks per second that refill the bucket. */
  ratePerS: number;
  /** Bucket size: the most tasks accepted at once after a quiet period. */
  burst: number;
  /** Largest accepted task payload, as UTF-8 JSON bytes. */
  maxPayloadBytes: number;
  /** How late a task may be published before it counts as overdue. */
  graceMs: number;
  /** max_attempts and backoff for the tenant's tasks that name none (domain/retry-defaults.ts). */
  retryDefaults: TenantRetryDefaults;
}

export const DEFAULT_TENANT_LIMITS: TenantLimits = {
  ratePerS: 1000,
  burst: 2000,
  maxPayloadBytes: 64 * 1024,
  graceMs: 5000,
  retryDefaults: {},
};
