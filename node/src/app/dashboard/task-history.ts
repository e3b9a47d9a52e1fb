/**
 * A task's timeline and attempts (GET /v1/tasks/{id}/history).
 *
 * Timeline: created → armed → published → started → finished, each with its
 * instant and its lateness against run_at (negative: ahead of it, as an arm
 * is by design: the dispatcher arms up to CF_CLAIM_LOOKAHEAD_MS early). The
 * row keeps one instant per transition, overwritten by each attempt, so a
 * stage from before the latest failure belongs to an earlier attempt: it is
 * left out here (it is in that attempt's entry) rather than shown against
 * the retry's run_at. "published" is the envelope's dispatched_at, which
 * the Node worker's start stores; HTTP workers do not send it.
 *
 * Attempts: tasks.attempts (every attempt that ended without completing,
 * each with its fencing token, worker and error), then the attempt in the row
 * itself when it is running or completed (its token, worker and result).
 */
import type { Task } from "../../domain/task.js";
import type { Principal } from "../../domain/tenant.js";
import { isUuid } from "../../domain/uuid.js";
import type {
  AttemptRecord,
  DashboardStore,
  TaskHistoryRecord,
} from "../../ports/dashboard-store.js";
import { notFound } from "./query-params.js";

export type StageName = "created" | "armed" | "published" | "started" | "finished";

export interface Stage {
  stage: StageName;
  atMs: number | null;
  /** atMs − run_at (null when the stage has not happened, and for `created`). */
  latenessMs: number | null;
  /** For `finished`: COMPLETED, DEAD, CANCELLED or SKIPPED. */
  outcome?: string;
}

export interface TaskHistory {
  task: Task;
  fencingToken: string | null;
  leaseOwner: string | null;
  leaseExpiresAtMs: number | null;
  dispatchShard: number | null;
  dispatchEpoch: number | null;
  stages: Stage[];
  attempts: AttemptRecord[];
}

export class TaskHistoryService {
  constructor(private readonly store: DashboardStore) {}

  async get(principal: Principal, taskId: string): Promise<TaskHistory> {
    const record = isUuid(taskId) ? await this.store.history(principal.tenantId, taskId) : null;
    if (!record) throw notFound("task", taskId);
    return historyOf(record);
  }
}

export function historyOf(record: TaskHistoryRecord): TaskHistory {
  const { task } = record;
  const cycleStartMs = currentAttemptSinceMs(record);
  const current = (ms: number | null) => (ms !== null && ms >= cycleStartMs ? ms : null);
  const late = (ms: number | null) => (ms === null ? null : ms - task.runAtMs);
  const armed = current(record.armedAtMs);
  const published = current(record.dispatchedAtMs);
  const started = current(record.startedAtMs);
  const finished = finishOf(record);
  const stages: Stage[] = [
    { stage: "created", atMs: task.createdAtMs, latenessMs: null },
    { stage: "armed", atMs: armed, latenessMs: late(armed) },
    { stage: "published", atMs: published, latenessMs: late(published) },
    { stage: "started", atMs: started, latenessMs: late(started) },
    {
      stage: "finished",
      atMs: finished?.atMs ?? null,
      latenessMs: late(finished?.atMs ?? null),
      ...(finished && { outcome: finished.outcome }),
    },
  ];
  return {
    task,
    fencingToken: record.fencingToken,
    leaseOwner: record.leaseOwner,
    leaseExpiresAtMs: record.leaseExpiresAtMs,
    dispatchShard: record.dispatchShard,
    dispatchEpoch: record.dispatchEpoch,
    stages,
    attempts: [...record.attempts, ...currentAttempt(record, started)],
  };
}

function finishOf(record: TaskHistoryRecord): { atMs: number; outcome: string } | null {
  const { status } = record.task;
  const atMs =
    status === "COMPLETED"
      ? record.completedAtMs
      : status === "DEAD"
        ? record.deadAtMs
        : status === "CANCELLED"
          ? record.task.cancelledAtMs
          : status === "SKIPPED"
            ? record.skippedAtMs
            : null;
  return atMs === null ? null : { atMs, outcome: status };
}

/** The attempt the row itself holds: running now, or the one that completed. */
/**
 * Instants from before the latest failure (or its replay) are an earlier
 * attempt's. A DEAD task's latest failure is its last attempt's own end, so
 * that attempt began after the failure before it (the entry before the last).
 */
function currentAttemptSinceMs(record: TaskHistoryRecord): number {
  if (record.task.status !== "DEAD") return record.failedAtMs ?? Number.NEGATIVE_INFINITY;
  return record.attempts.at(-2)?.endedAtMs ?? Number.NEGATIVE_INFINITY;
}

function currentAttempt(record: TaskHistoryRecord, startedAtMs: number | null): AttemptRecord[] {
  const { status } = record.task;
  if ((status !== "RUNNING" && status !== "COMPLETED") || startedAtMs === null) return [];
  return [
    {
      attempt: record.task.attempt,
      fencingToken: record.fencingToken,
      workerId: record.leaseOwner,
      dispatchedAtMs: record.dispatchedAtMs,
      startedAtMs,
      endedAtMs: status === "COMPLETED" ? record.completedAtMs : null,
      outcome: status === "COMPLETED" ? "completed" : "running",
      error: null,
      ...(status === "COMPLETED" && { result: record.task.result }),
    },
  ];
}
