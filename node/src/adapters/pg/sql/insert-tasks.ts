import { sqlTimestamptz } from "../epoch-ms.js";

/**
 * insert-tasks: one group commit. The contract of cf_insert_tasks is in
 * migrations/000003_api_functions.sql (each row also carries hot_shard since
 * 000008_hot_shard.sql). Sent as a single statement outside
 * BEGIN/COMMIT, so Postgres commits it on its own: one round trip, one fsync.
 * $1 rows jsonb, $2 tenants uuid[] (distinct), $3 now_ms float8 → rows (ord, task_id, request_hash hex) for
 * idempotency keys that were already taken.
 */
export const INSERT_TASKS = `
SELECT ord, task_id, encode(request_hash, 'hex') AS request_hash
  FROM cf_insert_tasks($1::jsonb, $2::uuid[], ${sqlTimestamptz("$3")})`;
