import { createHash, randomBytes } from "node:crypto";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import {
  type TenantRetryDefaults,
  tenantRetryDefaultsProblems,
} from "../../domain/retry-defaults.js";
import { DEFAULT_TENANT_LIMITS, type Principal, type TenantLimits } from "../../domain/tenant.js";
import type { CreatedTenant, TenantDirectory, TenantRecord } from "../../ports/tenant-directory.js";
import { roundMs } from "./epoch-ms.js";
import { fromPgError } from "./errors.js";
import { type PgPool, withTransaction } from "./pool.js";
import {
  AUDIT_API_KEY_CREATE,
  AUDIT_TENANT_CREATE,
  AUDIT_TENANT_UPDATE,
  AUTHENTICATE,
  INSERT_API_KEY,
  INSERT_TENANT,
  LIST_TENANTS,
  LOCK_TENANT_BY_NAME,
  REVOKE_API_KEY,
  UPDATE_TENANT_LIMITS,
} from "./sql/tenants.js";

/** API keys look like `cfk_<43 base64url chars>`: 256 random bits. */
export function generateApiKey(): string {
  return `cfk_${randomBytes(32).toString("base64url")}`;
}

export function hashApiKey(apiKey: string): Uint8Array {
  return createHash("sha256").update(apiKey).digest();
}

/**
 * Tenants and keys in Postgres. `authenticate` runs as the API role through
 * the SECURITY DEFINER function cf_authenticate; the rest are admin
 * operations and need the owner's pool.
 */
export class PgTenantDirectory implements TenantDirectory {
  constructor(
    private readonly pool: PgPool,
    private readonly newId: () => string,
  ) {}

  async authenticate(apiKeyHash: Uint8Array): Promise<Principal | null> {
    try {
      const result = await this.pool.query(AUTHENTICATE, [Buffer.from(apiKeyHash)]);
      const row = result.rows[0];
      if (!row) return null;
      return { tenantId: row.tenant_id, apiKeyId: row.api_key_id, limits: limitsOf(row) };
    } catch (error) {
      throw fromPgError(error, "authenticate");
    }
  }

  async create(name: string, limits: Partial<TenantLimits>, nowMs: number): Promise<CreatedTenant> {
    const full: TenantLimits = { ...DEFAULT_TENANT_LIMITS, ...limits };
    checkRetryDefaults(full);
    const retry = full.retryDefaults;
    const tenantId = this.newId();
    const apiKeyId = this.newId();
    const apiKey = generateApiKey();
    try {
      return await withTransaction(this.pool, async (client) => {
        await client.query(INSERT_TENANT, [
          tenantId,
          name,
          full.ratePerS,
          full.burst,
          full.maxPayloadBytes,
          full.graceMs,
          retry.maxAttempts ?? null,
          retry.backoffBaseMs ?? null,
          retry.backoffMaxMs ?? null,
          nowMs,
        ]);
        await client.query(INSERT_API_KEY, [
          apiKeyId,
          tenantId,
          Buffer.from(hashApiKey(apiKey)),
          nowMs,
        ]);
        await client.query(AUDIT_TENANT_CREATE, [
          tenantId,
          JSON.stringify({ name, api_key_id: apiKeyId }),
          nowMs,
        ]);
        const tenant = { id: tenantId, name, limits: full, createdAtMs: nowMs, activeKeys: 1 };
        return { tenant, apiKeyId, apiKey };
      });
    } catch (error) {
      if ((error as { code?: string }).code === "23505") {
        throw new ChronofenceError(ErrorCode.InvalidRequest, `tenant "${name}" already exists`);
      }
      throw fromPgError(error, "create tenant");
    }
  }

  async update(
    name: string,
    changes: Partial<TenantLimits>,
    nowMs: number,
  ): Promise<TenantRecord | null> {
    try {
      return await withTransaction(this.pool, async (client) => {
        const found = await client.query(LOCK_TENANT_BY_NAME, [name]);
        if (found.rowCount === 0) return null;
        const current = recordOf(found.rows[0]);
        const limits: TenantLimits = {
          ...current.limits,
          ...changes,
          retryDefaults: { ...current.limits.retryDefaults, ...changes.retryDefaults },
        };
        checkRetryDefaults(limits);
        const retry = limits.retryDefaults;
        await client.query(UPDATE_TENANT_LIMITS, [
          current.id,
          limits.ratePerS,
          limits.burst,
          limits.maxPayloadBytes,
          limits.graceMs,
          retry.maxAttempts ?? null,
          retry.backoffBaseMs ?? null,
          retry.backoffMaxMs ?? null,
        ]);
        await client.query(AUDIT_TENANT_UPDATE, [
          current.id,
          JSON.stringify({ from: current.limits, to: limits }),
          nowMs,
        ]);
        return { ...current, limits };
      });
    } catch (error) {
      if (error instanceof ChronofenceError) throw error;
      throw fromPgError(error, "update tenant");
    }
  }

  /** A new key for an existing tenant (`chronofence dev` when its key file is gone); null if no such tenant. */
  async createKey(
    name: string,
    nowMs: number,
  ): Promise<{ tenantId: string; apiKeyId: string; apiKey: string } | null> {
    const apiKeyId = this.newId();
    const apiKey = generateApiKey();
    try {
      return await withTransaction(this.pool, async (client) => {
        const found = await client.query(LOCK_TENANT_BY_NAME, [name]);
        if (found.rowCount === 0) return null;
        const tenantId: string = found.rows[0].id;
        await client.query(INSERT_API_KEY, [
          apiKeyId,
          tenantId,
          Buffer.from(hashApiKey(apiKey)),
          nowMs,
        ]);
        await client.query(AUDIT_API_KEY_CREATE, [tenantId, apiKeyId, nowMs]);
        return { tenantId, apiKeyId, apiKey };
      });
    } catch (error) {
      throw fromPgError(error, "create key");
    }
  }

  async list(): Promise<TenantRecord[]> {
    try {
      const result = await this.pool.query(LIST_TENANTS);
      return result.rows.map(recordOf);
    } catch (error) {
      throw fromPgError(error, "list tenants");
    }
  }

  async revokeKey(apiKeyId: string, nowMs: number): Promise<boolean> {
    try {
      const result = await this.pool.query(REVOKE_API_KEY, [apiKeyId, nowMs]);
      return result.rowCount === 1;
    } catch (error) {
      throw fromPgError(error, "revoke key");
    }
  }
}

// biome-ignore lint/suspicious/noExplicitAny: a row of sql/tenants.ts TENANT_RECORDS, read field by field
function recordOf(row: any): TenantRecord {
  return {
    id: row.id,
    name: row.name,
    limits: limitsOf(row),
    createdAtMs: roundMs(row.created_at_ms),
    activeKeys: row.active_keys,
  };
}

function checkRetryDefaults(limits: TenantLimits): void {
  const problems = tenantRetryDefaultsProblems(limits.retryDefaults);
  if (problems.length > 0) {
    throw new ChronofenceError(
      ErrorCode.Unprocessable,
      `invalid tenant retry defaults: ${problems.join("; ")}`,
      { details: { problems } },
    );
  }
}

/** A row of tenants or of cf_authenticate. */
interface LimitsRow {
  rate_per_s: number;
  burst: number;
  max_payload_bytes: number;
  grace_ms: number;
  default_max_attempts: number | null;
  default_backoff_base_ms: number | null;
  default_backoff_max_ms: number | null;
}

function limitsOf(row: LimitsRow): TenantLimits {
  const retryDefaults: TenantRetryDefaults = {};
  if (row.default_max_attempts !== null) retryDefaults.maxAttempts = row.default_max_attempts;
  if (row.default_backoff_base_ms !== null)
    retryDefaults.backoffBaseMs = row.default_backoff_base_ms;
  if (row.default_backoff_max_ms !== null) retryDefaults.backoffMaxMs = row.default_backoff_max_ms;
  return {
    ratePerS: row.rate_per_s,
    burst: row.burst,
    maxPayloadBytes: row.max_payload_bytes,
    graceMs: row.grace_ms,
    retryDefaults,
  };
}
