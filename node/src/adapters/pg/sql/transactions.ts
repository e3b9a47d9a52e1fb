/**
 * Transaction control (pool.ts withTransaction, withTenant; migrate.ts).
 * None takes a lock itself; row-level security reads app.tenant_id
 * (cf_current_tenant, migrations/000001_core.sql).
 */
import pg from "pg";

export const BEGIN = "BEGIN";
export const COMMIT = "COMMIT";
export const ROLLBACK = "ROLLBACK";

/**
 * begin-for-tenant: BEGIN, then app.tenant_id set for this transaction only
 * (set_config(…, true)), in one round trip. No parameters: the id is a
 * validated UUID, safe to inline as a literal. → the set_config row.
 */
export const beginForTenant = (tenantId: string): string =>
  `BEGIN; SELECT set_config('app.tenant_id', ${pg.escapeLiteral(tenantId)}, true)`;
