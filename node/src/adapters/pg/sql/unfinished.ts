/**
 * Unfinished tasks of a state, found by run_at: the re-arm of stale ARMED
 * tasks, the lease reaper's RUNNING ones, the dashboard's overdue count.
 *
 * No index names the status (migrations/000020_hot_updates.sql: else the arm
 * and the start could not be HOT updates). The one index that tells states
 * apart is tasks_unfinished_shard_run_at_idx (hot_shard, run_at, id) WHERE
 * unfinished, so these statements read it shard by shard, in run_at order,
 * up to a limit, and test the state on the row. The order and the limit are
 * what keep the planner on that index whatever a filling partition's
 * statistics say: a plan that stops at the limit beats a scan and a sort.
 * Before `before`, the unfinished tasks are those in flight, and a backlog
 * when the system is behind.
 */
import { HOT_SHARD_COUNT } from "../../../domain/shard.js";

const EVERY_SHARD = `'{${Array.from({ length: HOT_SHARD_COUNT }, (_, i) => i).join(",")}}'::smallint[]`;

export interface UnfinishedQuery {
  /** The select list, of `tasks` unaliased. */
  columns: string;
  /** A run_at bound (`run_at < $1::timestamptz`) and the state's tests. */
  where: string;
  /** At most this many rows per shard (the caller limits the whole too). */
  limit: string;
  /** FOR UPDATE SKIP LOCKED: rows another transaction holds are its to decide. */
  lock?: boolean;
}

/** A FROM item: the rows of every shard that match, `limit` at most per shard, oldest run_at first. */
export const unfinishedByRunAt = (q: UnfinishedQuery): string => `
  unnest(${EVERY_SHARD}) AS shards (shard)
  CROSS JOIN LATERAL (
    SELECT ${q.columns}
      FROM tasks
     WHERE unfinished AND hot_shard = shards.shard AND ${q.where}
     ORDER BY run_at
     LIMIT ${q.limit}${q.lock ? "\n       FOR UPDATE SKIP LOCKED" : ""}
  )`;
