import type { ArmedTask } from "../domain/envelope.js";
import type { ExecutionFailure } from "./execution-store.js";
import type { DueEntry } from "./hot-tier.js";

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
  /** Its hot-tier shard (shardOf), as stored with the task. */
  shard: number;
}

/** Where one shard's sweep resumes: after this (run_at, id), or from its first task (null). */
export interface ShardCursor {
  shard: number;
  after: { runAtMs: number; taskId: string } | null;
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
  /**
   * For each cursor's shard, up to `limitPerShard` of its SCHEDULED tasks with
   * run_at < beforeMs, the next ones in (run_at, id) order after the cursor;
   * one statement for all the shards. Entries of different shards come in no set order.
   */
  scheduledBefore(
    beforeMs: number,
    cursors: readonly ShardCursor[],
    limitPerShard: number,
  ): Promise<ScheduledEntry[]>;
  /**
   * Sends ARMED tasks armed and due before `staleBeforeMs` back to SCHEDULED
   * with a new fencing token (so an envelope already out cannot start them),
   * each once it has been armed longer than it was late when armed (at most
   * `maxWaitMs`): a task re-armed again and again waits twice as long each
   * time. Returns how many.
   */
  rearmStale(
    staleBeforeMs: number,
    maxWaitMs: number,
    nowMs: number,
    limit: number,
  ): Promise<number>;
}

/**
 * Tasks whose envelope the transport can never accept (larger than a
 * message may be): retrying would loop for ever, so each becomes DEAD with
 * the reason (a dead_letters row, reason "undeliverable"), fenced by its
 * arm's token — only while it is still ARMED with that token. A workflow
 * node's death is counted by its workflow in the same transaction.
 */
export interface UndeliverableTasks {
  /** The ids buried, and the workflow nodes their deaths released (for the hot tier). */
  bury(
    tasks: readonly ArmedTask[],
    failure: ExecutionFailure,
    nowMs: number,
  ): Promise<{ buried: string[]; released: DueEntry[] }>;
}
