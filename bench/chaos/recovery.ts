/**
 * The recovery objectives' arithmetic (pure: node/test/unit/chaos/recovery.test.ts):
 * when lateness is back to normal after a fault, whether the shards are
 * spread as the fair-share rule wants, and p50/max over trials against
 * Fencepost's targets.
 */
import { percentile } from "../stats.js";

export interface LatenessSample {
  dueMs: number;
  latenessMs: number;
}

/** "Normal" lateness: at most twice the p99 before the fault, and never less than `floorMs`. */
export function normalThresholdMs(before: readonly LatenessSample[], floorMs = 1000): number {
  const sorted = before.map((s) => s.latenessMs).sort((a, b) => a - b);
  return Math.max(floorMs, 2 * percentile(sorted, 99));
}

/**
 * From `faultMs`, how long until lateness is normal again: the due instant of
 * the first task due after the fault such that it and every task due within
 * `windowMs` after it ran within `thresholdMs` of its run_at, minus
 * `faultMs`. Null if that never happened among the samples (not recovered
 * while observed, or no samples after the fault).
 */
export function recoveryMs(
  samples: readonly LatenessSample[],
  faultMs: number,
  thresholdMs: number,
  windowMs: number,
): number | null {
  const after = samples.filter((s) => s.dueMs >= faultMs).sort((a, b) => a.dueMs - b.dueMs);
  const lastDueMs = after[after.length - 1]?.dueMs ?? Number.NEGATIVE_INFINITY;
  for (let i = 0; i < after.length; i++) {
    const start = after[i]!;
    // The window must be observed in full, or a tail of the run could pass for recovery.
    if (start.dueMs + windowMs > lastDueMs) return null;
    let ok = true;
    for (let j = i; j < after.length && after[j]!.dueMs <= start.dueMs + windowMs; j++) {
      if (after[j]!.latenessMs > thresholdMs) {
        ok = false;
        break;
      }
    }
    if (ok) return start.dueMs - faultMs;
  }
  return null;
}

/** Every shard held by a live node, each node holding exactly `targetOf(node)`. */
export function balanced(
  owners: ReadonlyMap<number, string>,
  liveNodes: readonly string[],
  shardCount: number,
  targetOf: (node: string) => number,
): boolean {
  for (let shard = 0; shard < shardCount; shard++) {
    const owner = owners.get(shard);
    if (owner === undefined || !liveNodes.includes(owner)) return false;
  }
  return liveNodes.every(
    (node) => [...owners.values()].filter((o) => o === node).length === targetOf(node),
  );
}

export interface Objective {
  name: string;
  /** Fencepost's target, if it sets one. */
  targetMs: number | null;
  samplesMs: Array<number | null>;
}

export interface ObjectiveSummary {
  name: string;
  trials: number;
  /** Trials that never recovered within the observation (null samples). */
  unrecovered: number;
  p50_ms: number | null;
  max_ms: number | null;
  target_ms: number | null;
  /** Within target on every trial (null: no target). */
  meets_target: boolean | null;
}

export function summarize(o: Objective): ObjectiveSummary {
  const measured = o.samplesMs.filter((s): s is number => s !== null).sort((a, b) => a - b);
  const unrecovered = o.samplesMs.length - measured.length;
  const max = measured.length > 0 ? measured[measured.length - 1]! : null;
  return {
    name: o.name,
    trials: o.samplesMs.length,
    unrecovered,
    p50_ms: measured.length > 0 ? percentile(measured, 50) : null,
    max_ms: max,
    target_ms: o.targetMs,
    meets_target:
      o.targetMs === null ? null : unrecovered === 0 && max !== null && max < o.targetMs,
  };
}
