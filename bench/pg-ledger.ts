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
 * work writes to the same server they count that work too. Where the server
 * preloads pg_stat_statements (track_planning on), the ledger also gives
 * Postgres' planning and execution time per task and the statements that
 * cost most, for the bench database alone.
 */
import type pg from "pg";

interface TableCounts {
  inserts: number;
  updates: number;
  hot_updates: number;
  deletes: number;
}

interface StatementCounts {
  query: string;
  calls: number;
  rows: number;
  plan_ms: number;
  exec_ms: number;
}

export interface LedgerMark {
  tables: Map<string, TableCounts>;
  walLsn: string | null;
  /** null where pg_stat_statements is not loaded (shared_preload_libraries). */
  statements: Map<string, StatementCounts> | null;
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
    // The flushed position: pg_get_wal_stats refuses an end past it ("cannot accept future end LSN").
    .then(
      async () => (await db.query("SELECT pg_current_wal_flush_lsn()::text AS lsn")).rows[0].lsn,
    )
    .catch(() => null); // not installed: the WAL part is left out
  return { tables, walLsn, statements: await markStatements(db) };
}

// This database's statements only: the roles' and the benchmark's own.
const STATEMENTS = `
  SELECT queryid::text AS id, query, calls::float8 AS calls, rows::float8 AS rows,
         total_plan_time AS plan_ms, total_exec_time AS exec_ms
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`;

async function markStatements(db: pg.Client): Promise<Map<string, StatementCounts> | null> {
  try {
    await db.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    const statements = new Map<string, StatementCounts>();
    for (const row of (await db.query(STATEMENTS)).rows) statements.set(row.id, row);
    return statements;
  } catch {
    return null; // not preloaded: the statement part is left out
  }
}

const STATEMENTS_SHOWN = 12;

/**
 * Postgres' own time per task, split into planning and execution, and the
 * statements that cost most: calls per task, rows per call, and each one's
 * planning and execution microseconds per task.
 */
function statementsBetween(
  before: Map<string, StatementCounts>,
  after: Map<string, StatementCounts>,
  tasks: number,
) {
  const deltas: StatementCounts[] = [];
  for (const [id, now] of after) {
    const was = before.get(id);
    const calls = now.calls - (was?.calls ?? 0);
    if (calls <= 0) continue;
    deltas.push({
      query: now.query.replace(/\s+/g, " ").slice(0, 100),
      calls,
      rows: now.rows - (was?.rows ?? 0),
      plan_ms: now.plan_ms - (was?.plan_ms ?? 0),
      exec_ms: now.exec_ms - (was?.exec_ms ?? 0),
    });
  }
  deltas.sort((a, b) => b.plan_ms + b.exec_ms - (a.plan_ms + a.exec_ms));
  const us = (ms: number) => Math.round((ms * 1000 * 10) / tasks) / 10;
  const sum = (key: "calls" | "plan_ms" | "exec_ms") => deltas.reduce((n, d) => n + d[key], 0);
  return {
    calls: perTask(sum("calls"), tasks),
    plan_us: us(sum("plan_ms")),
    exec_us: us(sum("exec_ms")),
    top: deltas.slice(0, STATEMENTS_SHOWN).map((d) => ({
      query: d.query,
      calls: perTask(d.calls, tasks),
      rows_per_call: Math.round((d.rows / d.calls) * 10) / 10,
      plan_us: us(d.plan_ms),
      exec_us: us(d.exec_ms),
    })),
  };
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
  if (before.statements !== null && after.statements !== null)
    ledger.statements_per_task = statementsBetween(before.statements, after.statements, tasks);
  return ledger;
}
