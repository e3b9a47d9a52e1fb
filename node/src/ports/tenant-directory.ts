import type { Scope } from "../domain/api-keys.js";
import type { Principal, TenantLimits } from "../domain/tenant.js";

export interface TenantRecord {
  id: string;
  name: string;
  limits: TenantLimits;
  createdAtMs: number;
  activeKeys: number;
}

export interface CreatedKey {
  apiKeyId: string;
  /** The plaintext key: shown once, never stored. */
  apiKey: string;
  scopes: readonly Scope[];
}

export interface CreatedTenant extends CreatedKey {
  tenant: TenantRecord;
}

/** Tenants and API keys. Keys are stored only as a hash. */
export interface TenantDirectory {
  authenticate(apiKeyHash: Uint8Array): Promise<Principal | null>;
  /** A new tenant and its first key, with DEFAULT_KEY_SCOPES. */
  create(name: string, limits: Partial<TenantLimits>, nowMs: number): Promise<CreatedTenant>;
  /** Another key for the tenant named `tenantName`; null if no tenant has that name. */
  createKey(
    tenantName: string,
    scopes: readonly Scope[],
    nowMs: number,
  ): Promise<CreatedKey | null>;
  list(): Promise<TenantRecord[]>;
  /**
   * Changes the named limits of a tenant (retry defaults field by field);
   * null if no tenant has that name. API processes apply it within their
   * key cache's lifetime.
   */
  update(name: string, changes: Partial<TenantLimits>, nowMs: number): Promise<TenantRecord | null>;
  /** True if a key was active and is now revoked. */
  revokeKey(apiKeyId: string, nowMs: number): Promise<boolean>;
}
