/**
 * For the tests of statements prepared on a day's partition
 * (adapters/pg/day-partition.ts): a pool of one connection as a given role,
 * so that the statements it prepared are the ones the test reads, and those
 * statements with their plan counts.
 */
import { createPgPool, type PgPool } from "../../../src/adapters/pg/pool.js";

export const onePreparingConnection = (url: string, role: string, applicationName: string) =>
  createPgPool({
    connectionString: url,
    maxConnections: 1,
    statementTimeoutMs: 30_000,
    connectTimeoutMs: 5000,
    role,
    applicationName,
    onError: () => undefined,
  });

/** The statements the pool's connection prepared, by name, with how often each was planned how. */
export async function preparedStatements(pool: PgPool) {
  const { rows } = await pool.query(
    "SELECT name, generic_plans::int, custom_plans::int FROM pg_prepared_statements ORDER BY name",
  );
  return rows as Array<{ name: string; generic_plans: number; custom_plans: number }>;
}

/** The name of the partition of the UTC day of `ms` (migrations/000002). */
export const partitionOf = (ms: number) =>
  `tasks_p${new Date(ms).toISOString().slice(0, 10).replaceAll("-", "")}`;
