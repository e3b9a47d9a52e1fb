/**
 * Partition maintenance of `tasks` (one partition per UTC day of run_at). Both
 * functions are in migrations/000002_partition_maintenance.sql; each takes the
 * transaction-scoped advisory lock hashtext('chronofence.task_partitions'), so
 * two maintainers cannot race on CREATE or DROP. Sent on its own, each
 * statement is its own transaction.
 */

/**
 * ensure-task-partitions: $1 from date, $2 to date (UTC days, `YYYY-MM-DD`).
 * Locks: the advisory lock, and the DDL locks of each CREATE TABLE … PARTITION OF tasks.
 * → 1 row (n: how many partitions it created).
 */
export const ENSURE_TASK_PARTITIONS = "SELECT cf_ensure_task_partitions($1::date, $2::date) AS n";

/**
 * drop-task-partitions: $1 before date (UTC day).
 * Locks: the advisory lock, and ACCESS EXCLUSIVE on tasks for each partition it drops.
 * → one row per partition of a day before $1 (partition, dropped: false when
 *   it still holds a pending task and was kept).
 */
export const DROP_TASK_PARTITIONS = "SELECT * FROM cf_drop_task_partitions($1::date)";

/**
 * analyze-task-partitions: $1 from date, $2 to date (UTC days, inclusive).
 * Locks: SHARE UPDATE EXCLUSIVE on each partition it analyzes (reads and
 * writes go on). → one row (partition) per partition that had rows but no
 * statistics on run_at, now analyzed (migrations/000021).
 */
export const ANALYZE_TASK_PARTITIONS =
  "SELECT partition FROM cf_analyze_task_partitions($1::date, $2::date) AS partition";
