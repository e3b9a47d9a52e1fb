/**
 * What Postgres writes per task during a benchmark run: row versions by
 * table (inserts, updates and how many of them were HOT, i.e. wrote no index
 * tuple), and the WAL records of the run by kind (Heap, Btree inserts, …).
 *
 * The row counters (pg_stat_user_tables) belong to the bench database alone,
 * so they are exact whatever else runs on the machine, once every backend
 * that served the run has flushed its statistics: read the second snapshot
 * after the roles have stopped (a backend flushes at exit). The WAL figures
 * (pg_walinspect, Postgres 15+) are cluster-wide: on a machine where other
 * work writes to the same server they count that work too.
 */
import type pg from "pg";

interface TableCounts {
  inserts: number;
  updates: number;
  hot_updates: number;
  deletes: number;
}

export interface LedgerMark {
  tables: Map<string, TableCounts>;
  walLsn: string | null;
}

// The daily partitions of tasks (tasks_p20261201, …) count as tasks.
const TABLES = `
  SELECT regexp_replace(relname, '_p\\d{8}$', '') AS name,
         sum(n_tup_ins)::float8 AS inserts, sum(n_tup_upd)::float8 AS updates,
         sum(n_tup_hot_upd)::float8 AS hot_updates, sum(n_tup_del)::float8 AS deletes
    FROM pg_stat_user_tables GROUP BY 1`;

export async function markLedger(db: pg.Client): Promise<LedgerMark> {
  const tables = new Map<string, TableCounts>();
  for (const row of (await db.query(TABLES)).rows) tables.set(row.name, row);
  const walLsn = await db
    .query("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
    .then(
      async () => (await db.query("SELECT pg_current_wal_insert_lsn()::text AS lsn")).rows[0].lsn,
    )
    .catch(() => null); // not installed: the WAL part is left out
  return { tables, walLsn };
}

const perTask = (n: number, tasks: number) => Math.round((n / tasks) * 100) / 100;

/**
 * Per task, between two marks: each table's row versions, the totals, and
 * (where pg_walinspect answers) the WAL records by resource manager/kind
 * above 0.05 per task, plus WAL bytes per task.
 */
export async function ledgerBetween(
  db: pg.Client,
  before: LedgerMark,
  tasks: number,
): Promise<Record<string, unknown>> {
  const after = await markLedger(db);
  const tables: Record<string, TableCounts> = {};
  const total: TableCounts = { inserts: 0, updates: 0, hot_updates: 0, deletes: 0 };
  for (const [name, counts] of after.tables) {
    const was = before.tables.get(name);
    const delta = {} as TableCounts;
    for (const key of Object.keys(total) as Array<keyof TableCounts>) {
      delta[key] = counts[key] - (was?.[key] ?? 0);
      total[key] += delta[key];
    }
    if (delta.inserts + delta.updates + delta.deletes === 0) continue;
    for (const key of Object.keys(delta) as Array<keyof TableCounts>)
      delta[key] = perTask(delta[key], tasks);
    tables[name] = delta;
  }
  for (const key of Object.keys(total) as Array<keyof TableCounts>)
    total[key] = perTask(total[key], tasks);
  const ledger: Record<string, unknown> = { tasks, per_task: { total, tables } };
  if (before.walLsn !== null && after.walLsn !== null) {
    const wal = await db.query(
      `SELECT "resource_manager/record_type" AS kind, count::float8 AS n, combined_size::float8 AS bytes
         FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true) WHERE count > 0`,
      [before.walLsn, after.walLsn],
    );
    const records: Record<string, number> = {};
    let bytes = 0;
    for (const row of wal.rows) {
      bytes += row.bytes;
      if (row.n / tasks >= 0.05) records[row.kind] = perTask(row.n, tasks);
    }
    ledger.wal_per_task = { cluster_wide: true, bytes: Math.round(bytes / tasks), records };
  }
  return ledger;
}
