import type { Task, TaskDraft, TaskStatus } from "../domain/task.js";

/** One row of a group commit: the draft plus what identifies its request. */
export interface InsertRequest {
  draft: TaskDraft;
  /** SHA-256 of the canonical request, only when the draft has an idempotency key. */
  requestHash: Uint8Array | null;
  /** The API key that submitted it, for the audit log. */
  apiKeyId: string;
  /** Groups rows into one audit entry per HTTP request. */
  requestId: string;
}

export type InsertOutcome =
  | { kind: "created" }
  /** The idempotency key exists with the same request hash: answer with the original. */
  | { kind: "replayed"; taskId: string }
  /** The idempotency key exists with another request hash. */
  | { kind: "conflict"; taskId: string };

export interface TaskFilter {
  status?: TaskStatus;
  type?: string;
  /** Exclusive keyset cursor: the id of the last task of the previous page. */
  afterId?: string;
  limit: number;
  /**
   * The change feed instead of the id order: tasks ordered by (updatedAtMs,
   * id), strictly after `after`, among the tenant's `windowTasks` most
   * recently created tasks only (so a page costs at most that many rows,
   * with no index on updated_at). `afterId` is then ignored.
   */
  changes?: { after: ChangePosition; windowTasks: number };
}

/** A position in the change feed: a task's updated_at and id. */
export interface ChangePosition {
  updatedAtMs: number;
  id: string;
}

export type CancelOutcome =
  | { kind: "cancelled"; task: Task }
  | { kind: "not_found" }
  | { kind: "not_cancellable"; task: Task };

/**
 * The cold tier (system of record). Implementations must make `insertMany`
 * durable (committed) before resolving, in one transaction for all rows, and
 * must scope every read and write to the tenant given.
 */
export interface TaskStore {
  /** Outcomes are in the order of `rows`. */
  insertMany(rows: readonly InsertRequest[], nowMs: number): Promise<InsertOutcome[]>;
  get(tenantId: string, taskId: string): Promise<Task | null>;
  list(tenantId: string, filter: TaskFilter): Promise<Task[]>;
  cancel(tenantId: string, taskId: string, apiKeyId: string, nowMs: number): Promise<CancelOutcome>;
}
