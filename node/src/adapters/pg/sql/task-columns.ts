import { sqlEpochMs } from "../epoch-ms.js";

/** The columns the API reads back, with times as epoch ms (no Date parsing in Node). */
export const TASK_COLUMNS = `
  id, tenant_id, type, payload, priority, status,
  ${sqlEpochMs("run_at")} AS run_at_ms,
  attempt, max_attempts, timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
  idempotency_key, fencing_token::text AS fencing_token, result, last_error, workflow_id, schedule_id,
  ${sqlEpochMs("created_at")} AS created_at_ms,
  ${sqlEpochMs("updated_at")} AS updated_at_ms,
  ${sqlEpochMs("cancelled_at")} AS cancelled_at_ms,
  ${sqlEpochMs("coalesce(completed_at, dead_at, skipped_at)")} AS finished_at_ms`;
