/**
 * The migration runner's ledger (migrate.ts): `cf_migrations`, one row per
 * applied file. Each file is applied in one transaction that runs these in
 * order: LOCK_MIGRATIONS, CREATE_LEDGER, LEDGER_HAS, INSERT_LEDGER_ROW, the file.
 */

/**
 * lock-migrations: $1 lock key text. Locks: the transaction-scoped advisory
 * lock hashtext($1), so two migrators serialise. → 1 row (void).
 */
export const LOCK_MIGRATIONS = "SELECT pg_advisory_xact_lock(hashtext($1))";

/** create-ledger: no parameters; creates cf_migrations if missing. Locks: that DDL's. → no rows. */
export const CREATE_LEDGER = `
CREATE TABLE IF NOT EXISTS cf_migrations (
  id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`;

/** ledger-has: $1 migration id integer. Locks: nothing. → 1 row if it was applied, else 0. */
export const LEDGER_HAS = "SELECT 1 FROM cf_migrations WHERE id = $1";

/** insert-ledger-row: $1 migration id integer, $2 name. Locks: the new row only. → no rows. */
export const INSERT_LEDGER_ROW = "INSERT INTO cf_migrations (id, name) VALUES ($1, $2)";
