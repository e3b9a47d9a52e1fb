import { TASK_COLUMNS } from "./task-columns.js";

/**
 * list-tasks: one page of a tenant's tasks, newest id last, keyset-paginated.
 * $1 tenant_id uuid, $2 status text|null, $3 type text|null,
 * $4 after_id uuid|null (exclusive cursor), $5 limit int → up to $5 rows.
 * UUIDv7 ids sort by creation time, so pages are stable under inserts.
 */
export const LIST_TASKS = `SELECT ${TASK_COLUMNS} FROM tasks
  WHERE tenant_id = $1
    AND ($2::text IS NULL OR status = $2)
    AND ($3::text IS NULL OR type = $3)
    AND ($4::uuid IS NULL OR id > $4)
  ORDER BY id
  LIMIT $5`;
