/**
 * A batched statement run on the partition of its rows' one UTC day
 * (tasks_pYYYYMMDD, migrations/000002) as a prepared statement, which
 * Postgres plans once per connection instead of once per batch: through
 * `tasks`, each execution was planned again, pruning ~400 partitions
 * (migrations/000022; bench/RESULTS.md sessions 16 and 26). A batch across
 * midnight, a partition that is gone (a stale ref of a dropped day) or a
 * role without the partitions' grants use the form on `tasks`.
 */
import { utcDayOfMs, utcDayStartMs } from "./epoch-ms.js";
import type { Queryable } from "./fenced-calls.js";

/** A batched statement: its text on `tasks` and on a partition, and the prefix of its prepared names. */
export interface DayPartitionStatement {
  onTasks: string;
  on: (partition: string) => string;
  name: string;
}

/** 42P01: no such table (the day's partition is gone); 42501: the role has no grant on it. */
const PARTITION_UNUSABLE = new Set(["42P01", "42501"]);

/**
 * The statement on the partition of the refs' one UTC day, prepared under a
 * name of its own; on `tasks` when the refs span days or that partition
 * cannot be used (and only then: a refusal of any other kind is the batch's).
 */
export async function onDayPartition(
  db: Queryable,
  statement: DayPartitionStatement,
  refs: ReadonlyArray<{ runAtMs: number }>,
  values: unknown[],
  // biome-ignore lint/suspicious/noExplicitAny: rows of the caller's statement, read field by field
): Promise<{ rows: any[] }> {
  const { firstMs, lastMs } = runAtDays(refs);
  const onDay = firstMs === lastMs ? onPartitionOf(statement, firstMs) : null;
  if (onDay !== null) {
    try {
      return await db.query({ name: onDay.name, text: onDay.text, values });
    } catch (error) {
      if (!PARTITION_UNUSABLE.has((error as { code?: string } | null)?.code ?? "")) throw error;
    }
  }
  return db.query(statement.onTasks, values);
}

/** A statement's prepared name and text on one day's partition. */
interface OnPartition {
  name: string;
  text: string;
}

/**
 * Each statement's form per day, built once: its text is a few KB, and a
 * worker runs hundreds of batches a second, nearly all on one or two days.
 * At most MAX_DAYS_HELD days are kept, so a process that lives for years
 * does not keep every day it saw.
 */
const onPartitions = new WeakMap<DayPartitionStatement, Map<number, OnPartition | null>>();
const MAX_DAYS_HELD = 16;

/** On the partition of the UTC day starting at dayStartMs; null outside the years 0–9999 (no partition's name can hold them). */
function onPartitionOf(statement: DayPartitionStatement, dayStartMs: number): OnPartition | null {
  let days = onPartitions.get(statement);
  if (days === undefined) {
    days = new Map();
    onPartitions.set(statement, days);
  }
  let onDay = days.get(dayStartMs);
  if (onDay === undefined) {
    const day = utcDayOfMs(dayStartMs).replaceAll("-", "");
    onDay = /^[0-9]{8}$/.test(day)
      ? { name: `${statement.name}_${day}`, text: statement.on(`tasks_p${day}`) }
      : null;
    if (days.size >= MAX_DAYS_HELD) days.clear();
    days.set(dayStartMs, onDay);
  }
  return onDay;
}

/** The starts of the UTC days of the refs' earliest and latest run_at. */
export function runAtDays(refs: ReadonlyArray<{ runAtMs: number }>): {
  firstMs: number;
  lastMs: number;
} {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const r of refs) {
    if (r.runAtMs < min) min = r.runAtMs;
    if (r.runAtMs > max) max = r.runAtMs;
  }
  return { firstMs: utcDayStartMs(min), lastMs: utcDayStartMs(max) };
}
