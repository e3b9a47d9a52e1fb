/**
 * Trigger rules (as in Airflow): when may a workflow node whose parents are
 * finishing run, and when can it never run?
 *
 * A node waits (WAITING) until its rule decides, from its parents' terminal
 * states so far, either `release` (→ SCHEDULED) or `skip` (→ SKIPPED, and its
 * own children then see a SKIPPED parent). The decision is monotone: once a
 * rule releases or skips, more parents finishing never changes it, which is
 * what lets the releaser decide as soon as it can.
 *
 * | rule          | release when                     | skip when                          |
 * |---------------|----------------------------------|------------------------------------|
 * | `all_success` | every parent COMPLETED           | any parent DEAD, SKIPPED, CANCELLED |
 * | `all_done`    | every parent terminal            | never                              |
 * | `one_success` | any parent COMPLETED             | all terminal, none COMPLETED       |
 * | `one_failed`  | any parent DEAD                  | all terminal, none DEAD            |
 * | `none_failed` | all terminal, none DEAD          | any parent DEAD                    |
 *
 * A CANCELLED parent counts as neither a success nor a failure; a node
 * without parents (a root) is released at once whatever its rule.
 * The SQL releaser implements the same table (cf_trigger_decision in
 * migrations/000007_workflows.sql); an integration test checks the two agree.
 */
export const TRIGGER_RULES = [
  "all_success",
  "all_done",
  "one_success",
  "one_failed",
  "none_failed",
] as const;
export type TriggerRule = (typeof TRIGGER_RULES)[number];

export const PARENT_OUTCOMES = ["COMPLETED", "DEAD", "SKIPPED", "CANCELLED"] as const;
export type ParentOutcome = (typeof PARENT_OUTCOMES)[number];

/** How many parents a node has, and how many ended in each terminal state so far. */
export interface ParentTally {
  total: number;
  completed: number;
  dead: number;
  skipped: number;
  cancelled: number;
}

export type TriggerDecision = "release" | "skip" | "wait";

export function decideTrigger(rule: TriggerRule, tally: ParentTally): TriggerDecision {
  if (tally.total === 0) return "release";
  const pending = tally.total - tally.completed - tally.dead - tally.skipped - tally.cancelled;
  switch (rule) {
    case "all_success":
      if (tally.completed === tally.total) return "release";
      return tally.dead + tally.skipped + tally.cancelled > 0 ? "skip" : "wait";
    case "all_done":
      return pending === 0 ? "release" : "wait";
    case "one_success":
      if (tally.completed > 0) return "release";
      return pending === 0 ? "skip" : "wait";
    case "one_failed":
      if (tally.dead > 0) return "release";
      return pending === 0 ? "skip" : "wait";
    case "none_failed":
      if (tally.dead > 0) return "skip";
      return pending === 0 ? "release" : "wait";
  }
}

/** The tally of `total` parents of which `finished` have ended as given. */
export function tallyOf(total: number, finished: readonly ParentOutcome[]): ParentTally {
  const tally: ParentTally = { total, completed: 0, dead: 0, skipped: 0, cancelled: 0 };
  for (const outcome of finished) {
    if (outcome === "COMPLETED") tally.completed++;
    else if (outcome === "DEAD") tally.dead++;
    else if (outcome === "SKIPPED") tally.skipped++;
    else tally.cancelled++;
  }
  return tally;
}
