/**
 * A node's report (ports/cluster-store.ts): every interval it writes who it
 * is, what only it knows (`describe`: its wheel's timers, its reconciler's
 * runs...) and the per-tenant activity it recorded (tenant-activity.ts), in
 * one statement; it also forgets nodes unseen for FORGET_AFTER_MS. One
 * small write per node per interval, whatever the task rate. On a graceful
 * stop the node removes its row; a crashed node's row ages out.
 */
import type { Clock } from "../../ports/clock.js";
import type { ClusterStore, NodeIdentity } from "../../ports/cluster-store.js";
import type { TenantActivity } from "./tenant-activity.js";

export const FORGET_AFTER_MS = 3_600_000;

export class NodeReporter {
  constructor(
    private readonly store: ClusterStore,
    private readonly clock: Clock,
    private readonly node: NodeIdentity,
    private readonly describe: () => Record<string, unknown>,
    private readonly activity: TenantActivity | null,
  ) {}

  async report(): Promise<void> {
    const nowMs = this.clock.nowMs();
    const tenants = this.activity?.snapshot(nowMs) ?? new Map();
    await this.store.report(this.node, this.describe(), tenants, nowMs);
    await this.store.forgetBefore(nowMs - FORGET_AFTER_MS);
  }

  remove(): Promise<void> {
    return this.store.remove(this.node);
  }
}
