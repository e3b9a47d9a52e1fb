/** A task's public JSON shape (docs/architecture.md section 8): snake_case, RFC 3339 times. */
import type { Task } from "../../domain/task.js";

const iso = (epochMs: number | null): string | null =>
  epochMs === null ? null : new Date(epochMs).toISOString();

export function presentTask(task: Task): Record<string, unknown> {
  return {
    id: task.id,
    type: task.type,
    status: task.status,
    priority: task.priority,
    run_at: iso(task.runAtMs),
    payload: task.payload,
    attempt: task.attempt,
    max_attempts: task.maxAttempts,
    timeout_ms: task.timeoutMs,
    backoff: {
      strategy: task.backoff.strategy,
      base_ms: task.backoff.baseMs,
      max_ms: task.backoff.maxMs,
    },
    idempotency_key: task.idempotencyKey,
    result: task.result,
    last_error: task.lastError,
    workflow_id: task.workflowId,
    schedule_id: task.scheduleId,
    created_at: iso(task.createdAtMs),
    updated_at: iso(task.updatedAtMs),
    cancelled_at: iso(task.cancelledAtMs),
    finished_at: iso(task.finishedAtMs),
  };
}
