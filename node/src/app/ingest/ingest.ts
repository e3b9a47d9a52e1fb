/**
 * The ingest use case: validate, rate-limit, group-commit, then (after the
 * commit, without holding up the answer) add due-soon ids to the hot tier.
 * Nothing is written for a request that fails validation or the rate limit.
 */
import { createHash } from "node:crypto";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import {
  type ValidatedSubmission,
  validateBatchEnvelope,
  validateSubmission,
} from "../../domain/submission.js";
import { type Task, taskOfDraft } from "../../domain/task.js";
import type { Principal } from "../../domain/tenant.js";
import type { Clock } from "../../ports/clock.js";
import type { DueEntry, HotTier } from "../../ports/hot-tier.js";
import type { IngestMetrics } from "../../ports/ingest-metrics.js";
import type { InsertOutcome, InsertRequest, TaskStore } from "../../ports/task-store.js";
import type { RateLimiter } from "../shared/rate-limiter.js";
import type { CommittedGroup, GroupCommitter } from "./group-commit.js";

export interface IngestOptions {
  horizonMs: number;
  hotWindowMs: number;
}

export interface SubmitResult {
  replayed: boolean;
  task: Task;
}

export type BatchItemResult =
  | { kind: "created" | "replayed"; taskId: string; runAtMs: number }
  | { kind: "conflict"; taskId: string };

export class IngestService {
  constructor(
    private readonly committer: GroupCommitter,
    private readonly store: TaskStore,
    private readonly hotTier: Pick<HotTier, "isConnected">,
    private readonly limiter: RateLimiter,
    private readonly clock: Clock,
    private readonly newId: () => string,
    private readonly options: IngestOptions,
  ) {}

  async submitOne(principal: Principal, body: unknown, requestId: string): Promise<SubmitResult> {
    const [submission] = this.validate(principal, [body], false);
    this.refuseWhileHotTierDown();
    this.limiter.take(principal.tenantId, principal.limits, 1);
    const [outcome] = await this.committer.submit([toInsert(submission!, principal, requestId)]);
    return this.resolveOne(principal, submission!, outcome!);
  }

  async submitBatch(
    principal: Principal,
    body: unknown,
    requestId: string,
  ): Promise<BatchItemResult[]> {
    const items = validateBatchEnvelope(body);
    const submissions = this.validate(principal, items, true);
    this.refuseWhileHotTierDown();
    this.limiter.take(principal.tenantId, principal.limits, submissions.length);
    const rows = submissions.map((s) => toInsert(s, principal, requestId));
    const outcomes = await this.committer.submit(rows);
    return outcomes.map((outcome, i) => {
      if (outcome.kind === "conflict") return { kind: "conflict", taskId: outcome.taskId };
      const draft = submissions[i]!.draft;
      if (outcome.kind === "created")
        return { kind: "created", taskId: draft.id, runAtMs: draft.runAtMs };
      return { kind: "replayed", taskId: outcome.taskId, runAtMs: draft.runAtMs };
    });
  }

  /**
   * A dependency that is down answers 503, writes nothing (docs/architecture.md section 9). Only a
   * connection known to be down counts: an add that fails after the commit
   * still answers 201, since the task is durable and the reconciler re-adds it.
   */
  private refuseWhileHotTierDown(): void {
    if (!this.hotTier.isConnected()) {
      throw new ChronofenceError(ErrorCode.Unavailable, "redis unavailable; nothing was written");
    }
  }

  private validate(
    principal: Principal,
    items: unknown[],
    indexed: boolean,
  ): ValidatedSubmission[] {
    const ctx = {
      tenantId: principal.tenantId,
      nowMs: this.clock.nowMs(),
      horizonMs: this.options.horizonMs,
      maxPayloadBytes: principal.limits.maxPayloadBytes,
      retryDefaults: principal.limits.retryDefaults,
      newTaskId: this.newId,
    };
    return items.map((item, i) => validateSubmission(item, ctx, indexed ? i : undefined));
  }

  private async resolveOne(
    principal: Principal,
    submission: ValidatedSubmission,
    outcome: InsertOutcome,
  ): Promise<SubmitResult> {
    if (outcome.kind === "created") {
      return { replayed: false, task: taskOfDraft(submission.draft, submission.payload) };
    }
    if (outcome.kind === "conflict") {
      throw new ChronofenceError(
        ErrorCode.IdempotencyConflict,
        "idempotency key already used with a different request",
        { details: { idempotency_key: submission.draft.idempotencyKey, task_id: outcome.taskId } },
      );
    }
    const original = await this.store.get(principal.tenantId, outcome.taskId);
    if (!original) {
      // The original's partition was dropped by retention after it finished.
      throw new ChronofenceError(
        ErrorCode.IdempotencyConflict,
        "idempotency key refers to an expired task",
        {
          details: { task_id: outcome.taskId },
        },
      );
    }
    return { replayed: true, task: original };
  }
}

/** Wires the committer's after-commit hook to the hot tier and metrics. */
export function afterCommit(
  clock: Clock,
  hotWindowMs: number,
  hotTier: HotTier,
  metrics: IngestMetrics,
  onHotTierError: (error: unknown) => void,
): (group: CommittedGroup, durationMs: number, ok: boolean) => void {
  return (group, durationMs, ok) => {
    metrics.groupCommit(group.rows.length, durationMs, ok);
    if (!ok) return;
    const entries = dueEntriesOf(group, clock.nowMs() + hotWindowMs);
    if (entries.length === 0) return;
    // Not awaited: the answer depends on Postgres only. A lost add is repaired
    // by the pre-loader, which sweeps the hot window from Postgres.
    hotTier.addDue(entries).then(
      () => metrics.hotTierAdded(entries.length, true),
      (error: unknown) => {
        metrics.hotTierAdded(entries.length, false);
        onHotTierError(error);
      },
    );
  };
}

/** The tasks a commit created that are due before `dueBeforeMs`: the hot tier's share. */
function dueEntriesOf(group: CommittedGroup, dueBeforeMs: number): DueEntry[] {
  const entries: DueEntry[] = [];
  group.outcomes.forEach((outcome, i) => {
    const { draft } = group.rows[i]!;
    if (outcome.kind === "created" && draft.runAtMs <= dueBeforeMs) {
      entries.push({ tenantId: draft.tenantId, taskId: draft.id, runAtMs: draft.runAtMs });
    }
  });
  return entries;
}

function toInsert(s: ValidatedSubmission, principal: Principal, requestId: string): InsertRequest {
  const requestHash =
    s.canonicalRequest === null ? null : createHash("sha256").update(s.canonicalRequest).digest();
  return { draft: s.draft, requestHash, apiKeyId: principal.apiKeyId, requestId };
}
