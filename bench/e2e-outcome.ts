/**
 * What bench/e2e.ts reads after a run, for every system it drives
 * (Chronofence on the services, or `chronofence dev` on the embedded
 * default): the task rows as Postgres holds them, worker-start lateness,
 * completions, lost, early and duplicates (their definitions: e2e.ts), and
 * counters from a role's /metrics.
 */
import type pg from "pg";
import { latenessOf, plateauRate } from "./support.js";

export interface TaskRow {
  id: string;
  status: string;
  attempt: number;
  run_at_ms: number;
  /** The envelope's dispatched_at, which the fenced start stores (whole milliseconds). */
  dispatched_at_ms: number | null;
  started_at_ms: number | null;
  completed_at_ms: number | null;
}

/** Every task of the run, as Postgres holds it (the bench database holds nothing else). */
export async function readTasks(db: Pick<pg.ClientBase, "query">): Promise<TaskRow[]> {
  const result = await db.query<TaskRow>(
    `SELECT id, status, attempt,
            extract(epoch FROM run_at) * 1000 AS run_at_ms,
            extract(epoch FROM dispatched_at) * 1000 AS dispatched_at_ms,
            extract(epoch FROM started_at) * 1000 AS started_at_ms,
            extract(epoch FROM completed_at) * 1000 AS completed_at_ms
       FROM tasks`,
  );
  return result.rows.map((row) => ({
    ...row,
    run_at_ms: Number(row.run_at_ms),
    dispatched_at_ms: row.dispatched_at_ms === null ? null : Number(row.dispatched_at_ms),
    started_at_ms: row.started_at_ms === null ? null : Number(row.started_at_ms),
    completed_at_ms: row.completed_at_ms === null ? null : Number(row.completed_at_ms),
  }));
}

const PENDING = new Set(["SCHEDULED", "ARMED", "RUNNING"]);

/** Worker-start lateness, completions, lost, early and duplicates from the task rows. */
export function executionOutcome(
  run: Parameters<typeof plateauRate>[0],
  accepted: Map<string, number>,
  rows: readonly TaskRow[],
) {
  const byId = new Map(rows.map((row) => [row.id, row]));
  const starts: number[] = [];
  const sinceDispatch: number[] = [];
  const toDispatch: number[] = [];
  const completions: number[] = [];
  const notCompleted: Record<string, number> = {};
  let unfinished = 0;
  let early = 0;
  let duplicates = 0;
  for (const id of accepted.keys()) {
    const row = byId.get(id);
    const status = row?.status ?? "MISSING";
    if (row?.started_at_ms != null && row.started_at_ms < row.run_at_ms) early++;
    if (!row || status !== "COMPLETED" || row.started_at_ms === null) {
      notCompleted[status] = (notCompleted[status] ?? 0) + 1;
      if (PENDING.has(status)) unfinished++;
      continue;
    }
    starts.push(row.started_at_ms - row.run_at_ms);
    if (row.dispatched_at_ms !== null) {
      sinceDispatch.push(row.started_at_ms - row.dispatched_at_ms);
      toDispatch.push(row.dispatched_at_ms - row.run_at_ms);
    }
    if (row.attempt > 1) duplicates++;
    completions.push(row.completed_at_ms!);
  }
  return {
    workerStart: latenessOf(starts),
    /** From run_at to the envelope of the started attempt: the dispatcher's side. */
    runAtToDispatched: latenessOf(toDispatch),
    /** From the dispatcher's envelope to the worker's fenced start: the transport and the worker's intake. */
    dispatchedToStart: latenessOf(sinceDispatch),
    completed: starts.length,
    completedPerS: plateauRate(run, completions),
    lost: accepted.size - starts.length - unfinished,
    unfinished,
    notCompleted,
    early,
    duplicates,
  };
}

/** Sums a counter over its label sets (those containing `labels`) in a Prometheus text exposition. */
export async function counterOf(metricsPort: number, name: string, labels = ""): Promise<number> {
  const text = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then(
    (r) => r.text(),
    () => "",
  );
  let sum = 0;
  for (const line of text.split("\n")) {
    if ((line.startsWith(`${name} `) || line.startsWith(`${name}{`)) && line.includes(labels))
      sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}
