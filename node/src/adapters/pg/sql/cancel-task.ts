import { sqlTimestamptz } from "../epoch-ms.js";
import { TASK_COLUMNS } from "./task-columns.js";

/**
 * cancel-task: moves a task to CANCELLED if it has not started, and writes
 * the audit row in the same statement (so in the same transaction).
 * $1 tenant_id uuid, $2 id uuid, $3 now_ms float8, $4 api_key_id uuid,
 * $5 cancellable statuses text[]
 * → 1 row (TASK_COLUMNS after the change) if this call cancelled it, else 0
 *   rows: the caller then reads the task to tell "unknown" from "not cancellable".
 * FOR UPDATE makes a concurrent dispatcher or worker transition wait, so the
 * status we test is the status we change.
 */
export const CANCEL_TASK = `
WITH target AS (
  SELECT id AS target_id, run_at AS target_run_at FROM tasks
   WHERE tenant_id = $1 AND id = $2 AND status = ANY($5::text[])
   FOR UPDATE
),
changed AS (
  UPDATE tasks t
     SET status = 'CANCELLED',
         cancelled_at = ${sqlTimestamptz("$3")},
         updated_at = ${sqlTimestamptz("$3")}
    FROM target
   WHERE t.id = target.target_id AND t.run_at = target.target_run_at
     AND t.status = ANY($5::text[])
  RETURNING ${TASK_COLUMNS}
),
audited AS (
  INSERT INTO audit_log (tenant_id, api_key_id, action, task_ids, at)
  SELECT $1, $4, 'task.cancel', ARRAY[changed.id], ${sqlTimestamptz("$3")}
    FROM changed
)
SELECT * FROM changed`;
