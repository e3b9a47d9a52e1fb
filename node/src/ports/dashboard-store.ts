/**
 * The tenant-scoped reads (and the watchdog's alert writes) the dashboard
 * needs beyond the task, schedule and workflow stores (docs/dashboard.md).
 *
 * Contract: every method is scoped to `tenantId` (the Postgres adapter runs
 * it under row-level security with app.tenant_id set); another tenant's rows
 * are never returned, and an id of another tenant reads as absent. Reads
 * have bounded cost: every scan is capped (`maxRows`, `limit`), and a capped
 * result says so. Times are epoch ms from the caller's clock.
 */
import type { Priority, Task, TaskStatus } from "../domain/task.js";
import type { ActivityBucket, AlertRecord } from "./cluster-store.js";

export interface StateCount {
  status: TaskStatus;
  priority: Priority;
  count: number;
}

export interface TenantCounts {
  /** By status and priority, over the tenant's newest `maxRows` tasks (by id: creation order). */
  byState: StateCount[];
  /** Rows counted; equal to maxRows when the tenant has more (then `capped`). */
  countedRows: number;
  capped: boolean;
  /** The oldest task id counted (UUIDv7: its creation instant), null when none. */
  oldestCountedId: string | null;
  /** SCHEDULED or ARMED with run_at before `overdueBeforeMs`, at most maxRows. */
  overdue: number;
  /** Dead letters not replayed, at most maxRows. */
  openDeadLetters: number;
}

export interface StatsQuery {
  maxRows: number;
  overdueBeforeMs: number;
  /** Activity rows of nodes seen since then. */
  activitySinceMs: number;
}

export interface TenantStatsRecord {
  counts: TenantCounts;
  /** One array of buckets per node that reported the tenant's activity. */
  activity: ActivityBucket[][];
  alerts: AlertRecord[];
}

/** One entry of tasks.attempts (migrations/000017_attempt_history.sql). */
export interface AttemptRecord {
  attempt: number;
  fencingToken: string | null;
  workerId: string | null;
  dispatchedAtMs: number | null;
  startedAtMs: number | null;
  endedAtMs: number | null;
  outcome: "retried" | "dead" | "interrupted" | "cancelled" | "running" | "completed";
  error: unknown;
  result?: unknown;
}

/** A task with every instant of its row and its attempt history. */
export interface TaskHistoryRecord {
  task: Task;
  fencingToken: string | null;
  leaseOwner: string | null;
  leaseExpiresAtMs: number | null;
  dispatchShard: number | null;
  dispatchEpoch: number | null;
  armedAtMs: number | null;
  dispatchedAtMs: number | null;
  startedAtMs: number | null;
  completedAtMs: number | null;
  failedAtMs: number | null;
  deadAtMs: number | null;
  skippedAtMs: number | null;
  /** Attempts that ended without completing, oldest first (not the one in the row now). */
  attempts: AttemptRecord[];
}

export interface TaskSearch {
  status?: TaskStatus;
  type?: string;
  priority?: Priority;
  /** run_at in [runAtFromMs, runAtToMs). */
  runAtFromMs?: number;
  runAtToMs?: number;
  id?: string;
  idempotencyKey?: string;
  /** Exclusive keyset cursor: newer-first pages continue below this id. */
  beforeId?: string;
  limit: number;
}

export interface DeadLetterRecord {
  id: string;
  taskId: string;
  type: string;
  payload: unknown;
  attempt: number;
  maxAttempts: number;
  fencingToken: string;
  error: unknown;
  reason: string;
  workerId: string | null;
  runAtMs: number;
  deadAtMs: number;
  replayedAtMs: number | null;
}

export interface DeadLetterQuery {
  /** Only those not replayed yet. */
  openOnly: boolean;
  /** Exclusive keyset cursor (dead_at, id) of the last row of the previous page; newest first. */
  before?: { deadAtMs: number; id: string };
  limit: number;
}

export interface WorkflowSummary {
  id: string;
  status: string;
  failFast: boolean;
  nodeCount: number;
  pendingNodes: number;
  deadNodes: number;
  createdAtMs: number;
  updatedAtMs: number;
  finishedAtMs: number | null;
}

export interface AlertReport {
  key: string;
  kind: "canary" | "dead_mans_switch";
  state: "firing" | "resolved";
  message: string;
  details: Record<string, unknown>;
}

export interface DashboardStore {
  stats(tenantId: string, query: StatsQuery): Promise<TenantStatsRecord>;
  history(tenantId: string, taskId: string): Promise<TaskHistoryRecord | null>;
  /** Newest first. */
  search(tenantId: string, search: TaskSearch): Promise<Task[]>;
  deadLetters(tenantId: string, query: DeadLetterQuery): Promise<DeadLetterRecord[]>;
  /** Newest first, below `beforeId` if given. */
  workflows(tenantId: string, beforeId: string | null, limit: number): Promise<WorkflowSummary[]>;
  /** Inserts or replaces the alert's row (firing: fired_at = now unless it was firing already). */
  reportAlert(tenantId: string, alert: AlertReport, nowMs: number): Promise<void>;
}
