/**
 * The workflow use cases: submit (validate, rate-limit, one commit, then the
 * due roots to the hot tier), read, and cancel, always within the caller's
 * tenant. Releasing children is not here: it happens inside the transaction
 * that finishes a parent (adapters/pg/workflow-release.ts).
 */
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import type { Principal } from "../../domain/tenant.js";
import { isUuid } from "../../domain/uuid.js";
import { validateWorkflow, type WorkflowDraft } from "../../domain/workflow.js";
import type { Clock } from "../../ports/clock.js";
import type { HotTier } from "../../ports/hot-tier.js";
import type { WorkflowStore, WorkflowView } from "../../ports/workflow-store.js";
import type { RateLimiter } from "../shared/rate-limiter.js";

export interface WorkflowOptions {
  horizonMs: number;
  hotWindowMs: number;
}

export class WorkflowService {
  constructor(
    private readonly store: WorkflowStore,
    private readonly hotTier: Pick<HotTier, "addDue" | "isConnected">,
    private readonly limiter: RateLimiter,
    private readonly clock: Clock,
    private readonly newId: () => string,
    private readonly options: WorkflowOptions,
    private readonly onHotTierError: (error: unknown) => void,
  ) {}

  async submit(principal: Principal, body: unknown, requestId: string): Promise<WorkflowView> {
    const nowMs = this.clock.nowMs();
    const draft = validateWorkflow(body, {
      tenantId: principal.tenantId,
      nowMs,
      horizonMs: this.options.horizonMs,
      maxPayloadBytes: principal.limits.maxPayloadBytes,
      retryDefaults: principal.limits.retryDefaults,
      newTaskId: this.newId,
    });
    if (!this.hotTier.isConnected()) {
      throw new ChronofenceError(ErrorCode.Unavailable, "redis unavailable; nothing was written");
    }
    // One token per node, but at most the burst: a workflow bigger than the
    // burst empties the bucket rather than being refused forever.
    const tokens = Math.min(draft.nodes.length, principal.limits.burst);
    this.limiter.take(principal.tenantId, principal.limits, tokens);
    await this.store.insert(draft, { apiKeyId: principal.apiKeyId, requestId }, nowMs);
    this.addDueRoots(draft);
    return viewOfDraft(draft);
  }

  async get(principal: Principal, workflowId: string): Promise<WorkflowView> {
    const view = isUuid(workflowId) ? await this.store.get(principal.tenantId, workflowId) : null;
    if (!view) throw notFound(workflowId);
    return view;
  }

  /** Cancels the pending nodes (not running ones) and marks the workflow CANCELLED. */
  async cancel(principal: Principal, workflowId: string): Promise<WorkflowView> {
    if (!isUuid(workflowId)) throw notFound(workflowId);
    const nowMs = this.clock.nowMs();
    const outcome = await this.store.cancel(
      principal.tenantId,
      workflowId,
      principal.apiKeyId,
      nowMs,
    );
    if (outcome.kind === "not_found") throw notFound(workflowId);
    if (outcome.kind === "finished") {
      throw new ChronofenceError(ErrorCode.InvalidTransition, "the workflow has already finished", {
        details: { workflow_id: workflowId },
      });
    }
    return this.get(principal, workflowId);
  }

  /** Not awaited: the answer depends on Postgres only; the pre-loader repairs a lost add. */
  private addDueRoots(draft: WorkflowDraft): void {
    const dueBeforeMs = this.clock.nowMs() + this.options.hotWindowMs;
    const entries = draft.nodes
      .filter((n) => n.dependsOn.length === 0 && n.task.runAtMs <= dueBeforeMs)
      .map((n) => ({ tenantId: draft.tenantId, taskId: n.task.id, runAtMs: n.task.runAtMs }));
    if (entries.length > 0) this.hotTier.addDue(entries).catch(this.onHotTierError);
  }
}

function viewOfDraft(draft: WorkflowDraft): WorkflowView {
  return {
    id: draft.id,
    status: "RUNNING",
    failFast: draft.failFast,
    nodeCount: draft.nodes.length,
    pendingNodes: draft.nodes.length,
    createdAtMs: draft.createdAtMs,
    updatedAtMs: draft.createdAtMs,
    finishedAtMs: null,
    nodes: draft.nodes.map((n) => ({
      key: n.key,
      taskId: n.task.id,
      status: n.dependsOn.length === 0 ? "SCHEDULED" : "WAITING",
      triggerRule: n.triggerRule,
      dependsOn: n.dependsOn,
      attempt: 0,
      runAtMs: n.task.runAtMs,
      finishedAtMs: null,
    })),
  };
}

const notFound = (workflowId: string) =>
  new ChronofenceError(ErrorCode.NotFound, "workflow not found", {
    details: { workflow_id: workflowId.slice(0, 64) },
  });
