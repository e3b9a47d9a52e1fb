import type { ArmedTask } from "../domain/envelope.js";

/** An id taken from a shard's due set, with its run_at (the set's score). */
export interface Claim {
  taskId: string;
  runAtMs: number;
}

/** Shard authority the caller believes it holds. */
export interface ShardFence {
  shard: number;
  owner: string;
  epoch: number;
}

/** One shard's claims, to arm under that shard's fence. */
export interface ArmBatch {
  fence: ShardFence;
  claims: readonly Claim[];
}

export interface ArmResult {
  /** False when the fence no longer held: nothing was written (a stale dispatcher). */
  fenced: boolean;
  /** The tasks armed by this call, each with its new fencing token. */
  armed: ArmedTask[];
}

export interface ScheduledEntry {
  tenantId: string;
  taskId: string;
  runAtMs: number;
}

/** The cold tier as the dispatcher roles see it (all tenants). */
export interface DispatchStore {
  /**
   * Arms the claimed tasks that are SCHEDULED (or ARMED under an older epoch
   * of the same shard) in one statement for all batches; each batch's tasks
   * if and only if its own fence's lease is still current at `nowMs`.
   * Returns one result per batch, in order.
   */
  arm(batches: readonly ArmBatch[], nowMs: number): Promise<ArmResult[]>;
  /** SCHEDULED tasks with run_at < beforeMs, in (run_at, id) order after `after`. */
  scheduledBefore(
    beforeMs: number,
    after: { runAtMs: number; taskId: string } | null,
    limit: number,
  ): Promise<ScheduledEntry[]>;
  /**
   * Sends ARMED tasks armed and due before `staleBeforeMs` back to SCHEDULED
   * with a new fencing token (so an envelope already out cannot start them);
   * returns how many.
   */
  rearmStale(staleBeforeMs: number, nowMs: number, limit: number): Promise<number>;
}
