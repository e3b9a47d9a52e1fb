import { TASK_COLUMNS } from "./task-columns.js";

/**
 * get-task: one task of one tenant.
 * $1 tenant_id uuid, $2 id uuid → 0 or 1 row of TASK_COLUMNS.
 * Runs inside withTenant (RLS also restricts rows to app.tenant_id).
 */
export const GET_TASK = `SELECT ${TASK_COLUMNS} FROM tasks WHERE tenant_id = $1 AND id = $2`;
