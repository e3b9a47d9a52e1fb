/**
 * The fenced execution protocol as one use case, for both of its entry
 * points: the Node worker role (executor.ts, fed by Kafka) and the HTTP
 * worker protocol (adapters/http/execution-routes.ts) for workers in any
 * language. Each call is the store's fenced transition
 * (ports/execution-store.ts states the ground rules) followed by what must
 * happen after its commit, the same for both callers:
 *
 *  - a retry due within the hot window goes to the hot tier at once, so it
 *    fires at its backoff instant rather than at the next pre-load sweep;
 *  - workflow nodes released by a completion, death or cancellation go to
 *    the hot tier when they are due within the window;
 *  - a replayed task (due now) goes to its shard, as at submission.
 *
 * These adds are best effort: they run after the commit, a failure is
 * reported and never undoes or fails the transition (the pre-loader and the
 * reconciler's re-hydration add what is missing a few seconds later).
 */
import type {
  CompleteOutcome,
  ExecutionFailure,
  ExecutionRef,
  ExecutionStore,
  FailOutcome,
  HandBackPolicy,
  HeartbeatOutcome,
  ReplayOutcome,
  StartOutcome,
} from "../../ports/execution-store.js";
import type { DueEntry, HotTier } from "../../ports/hot-tier.js";

export interface ExecutionServiceDeps {
  store: ExecutionStore;
  hotTier: Pick<HotTier, "addDue">;
  onError: (error: unknown, what: string) => void;
}

export interface ExecutionServiceOptions {
  /** Retries and released nodes due within this go to the hot tier at once. */
  hotWindowMs: number;
}

export class ExecutionService {
  constructor(
    private readonly deps: ExecutionServiceDeps,
    private readonly options: ExecutionServiceOptions,
  ) {}

  start(
    ref: ExecutionRef,
    workerId: string,
    leaseMs: number,
    nowMs: number,
  ): Promise<StartOutcome> {
    return this.deps.store.start(ref, workerId, leaseMs, nowMs);
  }

  heartbeat(
    ref: ExecutionRef,
    workerId: string,
    leaseMs: number,
    nowMs: number,
  ): Promise<HeartbeatOutcome> {
    return this.deps.store.heartbeat(ref, workerId, leaseMs, nowMs);
  }

  async complete(ref: ExecutionRef, resultJson: string, nowMs: number): Promise<CompleteOutcome> {
    const outcome = await this.deps.store.complete(ref, resultJson, nowMs);
    // Nearly every completion releases nothing: then not even an empty hot-tier call is awaited.
    if (outcome.kind === "completed" && outcome.released?.length)
      await this.addReleased(outcome.released, nowMs);
    return outcome;
  }

  async fail(ref: ExecutionRef, failure: ExecutionFailure, nowMs: number): Promise<FailOutcome> {
    const outcome = await this.deps.store.fail(ref, failure, nowMs);
    await this.afterFailure(outcome, nowMs);
    return outcome;
  }

  /** The worker is stopping: due again at once, the attempt given back (never DEAD). */
  async interrupt(
    ref: ExecutionRef,
    failure: ExecutionFailure,
    nowMs: number,
  ): Promise<FailOutcome> {
    const outcome = await this.deps.store.interrupt(ref, failure, nowMs);
    await this.afterFailure(outcome, nowMs);
    return outcome;
  }

  /** No handler for the type here: due again later for another worker, the attempt given back. */
  async handBack(
    ref: ExecutionRef,
    failure: ExecutionFailure,
    nowMs: number,
    policy: HandBackPolicy,
  ): Promise<FailOutcome> {
    const outcome = await this.deps.store.handBack(ref, failure, nowMs, policy);
    await this.afterFailure(outcome, nowMs);
    return outcome;
  }

  async replay(
    tenantId: string,
    taskId: string,
    apiKeyId: string | null,
    nowMs: number,
  ): Promise<ReplayOutcome> {
    const outcome = await this.deps.store.replay(tenantId, taskId, apiKeyId, nowMs);
    if (outcome.kind === "replayed") {
      const { runAtMs } = outcome;
      await this.add([{ tenantId, taskId: outcome.taskId, runAtMs }], "add replayed task");
    }
    return outcome;
  }

  parentResults(tenantId: string, taskId: string): Promise<Record<string, unknown>> {
    return this.deps.store.parentResults(tenantId, taskId);
  }

  private async afterFailure(outcome: FailOutcome, nowMs: number): Promise<void> {
    if (outcome.kind === "retrying") {
      if (outcome.nextRunAtMs - nowMs > this.options.hotWindowMs) return;
      const { tenantId, taskId, nextRunAtMs: runAtMs } = outcome;
      await this.add([{ tenantId, taskId, runAtMs }], "add retry to hot tier");
    } else if (outcome.kind === "dead" || outcome.kind === "cancelled") {
      await this.addReleased(outcome.released, nowMs);
    }
  }

  private addReleased(released: readonly DueEntry[] | undefined, nowMs: number): Promise<void> {
    const due = dueWithin(released ?? [], nowMs + this.options.hotWindowMs);
    return this.add(due, "add released nodes to hot tier");
  }

  private async add(entries: readonly DueEntry[], what: string): Promise<void> {
    if (entries.length === 0) return;
    await this.deps.hotTier
      .addDue(entries)
      .catch((error: unknown) => this.deps.onError(error, what));
  }
}

/** The entries due at or before `dueBeforeMs`: those the hot tier should hold now. */
export const dueWithin = (entries: readonly DueEntry[], dueBeforeMs: number): DueEntry[] =>
  entries.filter((entry) => entry.runAtMs <= dueBeforeMs);
