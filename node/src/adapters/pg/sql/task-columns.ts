/** The columns the API reads back, with times as epoch ms (no Date parsing in Node). */
export const TASK_COLUMNS = `
  id, tenant_id, type, payload, priority, status,
  (extract(epoch FROM run_at) * 1000)::float8 AS run_at_ms,
  attempt, max_attempts, timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
  idempotency_key, fencing_token::text AS fencing_token, result, last_error, workflow_id, schedule_id,
  (extract(epoch FROM created_at) * 1000)::float8 AS created_at_ms,
  (extract(epoch FROM updated_at) * 1000)::float8 AS updated_at_ms,
  (extract(epoch FROM cancelled_at) * 1000)::float8 AS cancelled_at_ms,
  (extract(epoch FROM coalesce(completed_at, dead_at, skipped_at)) * 1000)::float8 AS finished_at_ms`;
