/**
 * The workflow side of the execution store's terminal transitions: locks the
 * workflows of tasks a transaction just ended (in id order) and runs the DAG
 * releaser (workflow-release.ts) for each task that is a workflow node, in
 * that same transaction.
 */
import type { DueEntry } from "../../ports/hot-tier.js";
import { roundMs } from "./epoch-ms.js";
import type { Queryable } from "./fenced-calls.js";
import { LOCK_WORKFLOWS } from "./sql/execution.js";
import { releaseDependents } from "./workflow-release.js";

/** A task this transaction made terminal: enough to release its workflow's nodes. */
export interface TerminalRow {
  id: string;
  run_at_ms: number;
  workflow_id: string | null;
}

/**
 * Locks the workflows of these rows (those in one), in id order, so two
 * transactions ending tasks of several workflows cannot deadlock; answers
 * the ids of those a node retry must not run in. The rows' own locks come
 * first: they are RUNNING tasks, which nothing under a workflow lock waits
 * for (the lock order of migrations/000007).
 */
export async function lockWorkflows(
  db: Queryable,
  rows: readonly TerminalRow[],
): Promise<Set<string>> {
  const ids = [...new Set(rows.flatMap((r) => (r.workflow_id === null ? [] : [r.workflow_id])))];
  if (ids.length === 0) return new Set();
  const locked = await db.query(LOCK_WORKFLOWS, [ids.sort()]);
  return new Set(locked.rows.filter((w) => w.stopped).map((w) => w.id as string));
}

/** The DAG releaser for the rows (now terminal, in this transaction) that are workflow nodes. */
export async function releaseTerminal(
  db: Queryable,
  rows: readonly TerminalRow[],
  nowMs: number,
): Promise<Map<string, DueEntry[]>> {
  await lockWorkflows(db, rows);
  return releaseLocked(db, rows, nowMs);
}

/** As releaseTerminal, for rows whose workflows this transaction already locked. */
export async function releaseLocked(
  db: Queryable,
  rows: readonly TerminalRow[],
  nowMs: number,
): Promise<Map<string, DueEntry[]>> {
  const released = new Map<string, DueEntry[]>();
  for (const row of rows) {
    if (row.workflow_id === null) continue;
    const runAtMs = roundMs(row.run_at_ms);
    const outcome = await releaseDependents(db, { taskId: row.id, runAtMs }, nowMs);
    released.set(row.id, outcome.released);
  }
  return released;
}
