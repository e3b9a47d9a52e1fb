/**
 * The chaos run's checker: every invariant of docs/architecture.md section 4,
 * judged from a recorded history (history.ts), in the manner of Jepsen's
 * checkers: each rule answers a verdict and its counterexamples, never a
 * boolean alone. Pure: no clock, no I/O, so each rule is tested on hand-made
 * histories that break it (node/test/unit/chaos/checker.test.ts).
 *
 * At least once means duplicates are allowed (a zombie worker may run a task
 * whose lease it lost); what is not allowed is two runs under one fencing
 * token, a commit of a token that was not the last, or anything early.
 */
import { dagOrder, dagOutcome } from "./dag-rules.js";
import type { Execution, History, TaskRow } from "./history.js";

export interface Verdict {
  rule: string;
  ok: boolean;
  /** At most MAX_EXAMPLES counterexamples, each a short sentence naming ids and instants. */
  counterexamples: string[];
  /** How many violations in all (counterexamples are capped). */
  violations: number;
}

const MAX_EXAMPLES = 10;
export const TERMINAL: ReadonlySet<string> = new Set(["COMPLETED", "DEAD", "CANCELLED", "SKIPPED"]);
/** Cancel answers that say what happened; any other (no answer, 5xx) may or may not have committed. */
const KNOWN_CANCEL_ANSWERS = new Set([200, 404, 409]);

export type Rule = (h: History, index: Index) => string[];

export interface Index {
  rows: Map<string, TaskRow>;
  executionsOf: Map<string, Execution[]>;
}

function indexOf(h: History): Index {
  const rows = new Map(h.tasks.map((row) => [row.id, row]));
  const executionsOf = new Map<string, Execution[]>();
  for (const e of h.executions) {
    const list = executionsOf.get(e.taskId) ?? [];
    list.push(e);
    executionsOf.set(e.taskId, list);
  }
  return { rows, executionsOf };
}

/**
 * Every acknowledged task is terminal as its intent says (or was cancelled, or
 * skipped by its DAG). A cancel whose answer never came may have committed:
 * its task may be CANCELLED too.
 */
const nothingLost: Rule = (h, { rows }) => {
  const cancelled = new Set(h.cancels.filter((c) => c.status === 200).map((c) => c.taskId));
  const maybeCancelled = new Set(
    h.cancels.filter((c) => !KNOWN_CANCEL_ANSWERS.has(c.status)).map((c) => c.taskId),
  );
  const problems: string[] = [];
  for (const task of h.submitted) {
    const row = rows.get(task.taskId);
    if (!row) {
      problems.push(`task ${task.taskId} acknowledged at ${task.ackedAtMs} has no row`);
      continue;
    }
    const expected = cancelled.has(task.taskId)
      ? ["CANCELLED"]
      : task.workflowId !== null
        ? ["COMPLETED", "DEAD", "CANCELLED", "SKIPPED"]
        : task.intent === "fail_always"
          ? ["DEAD"]
          : ["COMPLETED"];
    if (maybeCancelled.has(task.taskId)) expected.push("CANCELLED");
    if (!expected.includes(row.status))
      problems.push(`task ${task.taskId} is ${row.status}, expected ${expected.join(" or ")}`);
  }
  return problems;
};

/** No execution started before its task's run_at. */
const noEarlyExecution: Rule = (h) => {
  // The run_at the task was inserted with: what its 201 said. An acknowledgement seen in the
  // history may be a later idempotent replay (the 201 lost to a fault), which answers with the
  // task as it is then, whose run_at a retry may have moved later.
  const inserted = new Map<string, number>();
  for (const t of h.transitions)
    if (t.from === "" && t.runAtMs !== undefined && !inserted.has(t.taskId))
      inserted.set(t.taskId, t.runAtMs);
  const runAt = new Map<string, number>();
  for (const t of h.submitted)
    runAt.set(
      t.taskId,
      Math.min(
        t.runAtMs,
        inserted.get(t.taskId) ?? Number.POSITIVE_INFINITY,
        runAt.get(t.taskId) ?? Number.POSITIVE_INFINITY,
      ),
    );
  // A cron task was submitted by the planner: its first run_at is the one it was inserted with,
  // or else its occurrence, which jitter only delays.
  for (const row of h.tasks)
    if (row.scheduleId !== null)
      runAt.set(row.id, inserted.get(row.id) ?? row.scheduledForMs ?? row.runAtMs);
  const problems: string[] = [];
  for (const e of h.executions) {
    const dueMs = runAt.get(e.taskId);
    // A retry runs later than the first run_at, never earlier: the first run_at bounds every attempt.
    if (dueMs !== undefined && e.startedAtMs < dueMs)
      problems.push(
        `task ${e.taskId} token ${e.fencingToken} started at ${e.startedAtMs}, ${dueMs - e.startedAtMs} ms before its run_at`,
      );
  }
  return problems;
};

/**
 * Each run started no earlier than the run_at its token was armed with (a
 * retry's backoff, a released DAG node's delay): the transition that gave
 * the task that token, to ARMED, carries the due instant. Stronger than the
 * rule above, which knows only the first run_at.
 */
const noEarlyAttempt: Rule = (h) => {
  const armedDue = new Map<string, number>();
  for (const t of h.transitions)
    if (t.to === "ARMED" && t.fencingToken && t.runAtMs !== undefined)
      armedDue.set(`${t.taskId}/${t.fencingToken}`, t.runAtMs);
  const problems: string[] = [];
  for (const e of h.executions) {
    const dueMs = armedDue.get(`${e.taskId}/${e.fencingToken}`);
    if (dueMs === undefined)
      problems.push(`task ${e.taskId} ran under token ${e.fencingToken}, which was never armed`);
    else if (e.startedAtMs < dueMs)
      problems.push(
        `task ${e.taskId} token ${e.fencingToken} started at ${e.startedAtMs}, ${dueMs - e.startedAtMs} ms before the run_at it was armed with`,
      );
  }
  return problems;
};

/** No two executions under one fencing token. */
const oneExecutionPerToken: Rule = (h) => {
  const seen = new Map<string, Execution>();
  const problems: string[] = [];
  for (const e of h.executions) {
    const key = `${e.taskId}/${e.fencingToken}`;
    const first = seen.get(key);
    if (first)
      problems.push(
        `task ${e.taskId} ran twice under token ${e.fencingToken} (on ${first.node} at ${first.startedAtMs}, on ${e.node} at ${e.startedAtMs})`,
      );
    else seen.set(key, e);
  }
  return problems;
};

/** A COMPLETED task's committed token is the last token it ran under. */
const lastTokenCommits: Rule = (h, { executionsOf }) => {
  const problems: string[] = [];
  for (const row of h.tasks) {
    if (row.status !== "COMPLETED") continue;
    const runs = executionsOf.get(row.id) ?? [];
    if (runs.length === 0) {
      problems.push(`task ${row.id} is COMPLETED but no handler ran it`);
      continue;
    }
    const last = runs.reduce((a, b) => (BigInt(b.fencingToken) > BigInt(a.fencingToken) ? b : a));
    if (row.fencingToken !== last.fencingToken)
      problems.push(
        `task ${row.id} committed token ${row.fencingToken}, but its last run had token ${last.fencingToken}`,
      );
  }
  return problems;
};

/** One task per (schedule, occurrence), and every required occurrence fired. */
const cronOccurrences: Rule = (h) => {
  const byOccurrence = new Map<string, string[]>();
  for (const row of h.tasks) {
    if (row.scheduleId === null || row.scheduledForMs === null) continue;
    const key = `${row.scheduleId}@${row.scheduledForMs}`;
    byOccurrence.set(key, [...(byOccurrence.get(key) ?? []), row.id]);
  }
  const problems: string[] = [];
  for (const [key, ids] of byOccurrence)
    if (ids.length > 1)
      problems.push(`occurrence ${key} has ${ids.length} tasks: ${ids.join(", ")}`);
  for (const o of h.requiredOccurrences) {
    const ids = byOccurrence.get(`${o.scheduleId}@${o.scheduledForMs}`) ?? [];
    const ran = ids.some((id) => h.tasks.find((t) => t.id === id)?.status === "COMPLETED");
    if (!ran) problems.push(`occurrence ${o.scheduleId}@${o.scheduledForMs} never completed`);
  }
  return problems;
};

/** A task cancelled (200) before it was armed never ran. */
const cancelledNeverRan: Rule = (h, { rows, executionsOf }) => {
  const problems: string[] = [];
  for (const c of h.cancels) {
    if (c.status !== 200) continue;
    const runs = executionsOf.get(c.taskId) ?? [];
    if (runs.length > 0)
      problems.push(
        `task ${c.taskId} cancelled at ${c.sentAtMs} ran ${runs.length} time(s), first at ${runs[0]!.startedAtMs}`,
      );
    const row = rows.get(c.taskId);
    if (row && row.status !== "CANCELLED")
      problems.push(`task ${c.taskId} cancelled with 200 is ${row.status}`);
  }
  return problems;
};

/** One task per idempotency key: every acknowledgement of a key named the same task. */
const oneTaskPerKey: Rule = (h) => {
  const byKey = new Map<string, Set<string>>();
  for (const t of h.submitted) {
    if (t.idempotencyKey === null) continue;
    const ids = byKey.get(t.idempotencyKey) ?? new Set<string>();
    ids.add(t.taskId);
    byKey.set(t.idempotencyKey, ids);
  }
  for (const row of h.tasks) {
    if (row.idempotencyKey === null) continue;
    byKey.get(row.idempotencyKey)?.add(row.id);
  }
  return [...byKey]
    .filter(([, ids]) => ids.size > 1)
    .map(([key, ids]) => `idempotency key ${key} names ${ids.size} tasks: ${[...ids].join(", ")}`);
};

/** Terminal states never move back; replay (DEAD → SCHEDULED) is the one deliberate way back. */
const terminalStaysTerminal: Rule = (h) =>
  h.transitions
    .filter((t) => TERMINAL.has(t.from) && !(t.from === "DEAD" && t.to === "SCHEDULED"))
    .map((t) => `task ${t.taskId} moved ${t.from} → ${t.to} at ${t.atMs}`);

/** One more reconciler pass after quiescence changed no row. */
const reconcilerIdempotent: Rule = (h) => {
  const before = new Map(h.tasks.map((row) => [row.id, JSON.stringify(row)]));
  const problems: string[] = [];
  for (const row of h.tasksAfterReconcile) {
    if (before.get(row.id) !== JSON.stringify(row))
      problems.push(`task ${row.id} changed in a reconciler pass after quiescence`);
  }
  if (h.tasksAfterReconcile.length !== h.tasks.length)
    problems.push(
      `the reconciler pass changed the number of tasks (${h.tasks.length} → ${h.tasksAfterReconcile.length})`,
    );
  return problems;
};

export const RULES: ReadonlyArray<[string, Rule]> = [
  ["nothing_lost", nothingLost],
  ["no_early_execution", noEarlyExecution],
  ["no_early_attempt", noEarlyAttempt],
  ["one_execution_per_token", oneExecutionPerToken],
  ["last_token_commits", lastTokenCommits],
  ["cron_once_and_at_least_once", cronOccurrences],
  ["dag_order", dagOrder],
  ["dag_outcome", dagOutcome],
  ["cancelled_never_ran", cancelledNeverRan],
  ["one_task_per_idempotency_key", oneTaskPerKey],
  ["terminal_stays_terminal", terminalStaysTerminal],
  ["reconciler_idempotent", reconcilerIdempotent],
];

export function check(history: History): Verdict[] {
  const index = indexOf(history);
  return RULES.map(([rule, judge]) => {
    const problems = judge(history, index);
    return {
      rule,
      ok: problems.length === 0,
      counterexamples: problems.slice(0, MAX_EXAMPLES),
      violations: problems.length,
    };
  });
}
