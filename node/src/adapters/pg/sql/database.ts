/**
 * `chronofence migrate`'s local convenience (database.ts): statements on the
 * server's `postgres` maintenance database.
 */
import pg from "pg";

/** database-exists: $1 datname. Locks: nothing. → 1 row if that database exists, else 0. */
export const DATABASE_EXISTS = "SELECT 1 FROM pg_database WHERE datname = $1";

/**
 * create-database: no parameters (CREATE DATABASE takes none; the name is
 * quoted as an identifier). Locks: what CREATE DATABASE takes. → no rows;
 * SQLSTATE 42P04 if it was created concurrently.
 */
export const createDatabase = (name: string): string =>
  `CREATE DATABASE ${pg.escapeIdentifier(name)}`;
