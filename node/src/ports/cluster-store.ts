/**
 * What nodes report about themselves, and what the operator's cluster page
 * reads back (docs/dashboard.md, "Cluster"). A node is one group of roles of
 * a process (dispatch roles, worker, planner, api), named by its node id.
 *
 * Contract:
 *  - `report` replaces the node's row (roles, identity, `details`) and its
 *    per-tenant activity rows in one transaction: a tenant no longer in
 *    `tenants` loses its row. Times are the caller's clock.
 *  - `remove` deletes the node's row (a graceful stop); its activity rows
 *    age out (what it did lately still counts).
 *  - `forgetBefore` deletes rows of nodes unseen since `beforeMs` (crashed
 *    nodes): any node may call it, it is idempotent.
 *  - Reads are for the operator only (the caller checked CF_ADMIN_TOKEN):
 *    they span every tenant's leases and nodes.
 */
/**
 * One node's record of one tenant over [startMs, startMs + 10 s)
 * (app/dashboard/tenant-activity.ts); the histograms are sparse
 * {bin: count} (app/dashboard/latency-histogram.ts).
 */
export interface ActivityBucket {
  startMs: number;
  completed: number;
  /** Attempts that failed (retried, dead, or cancelled because their workflow stopped). */
  failed: number;
  /** Of those, tasks that went DEAD. */
  dead: number;
  /** envelope dispatched_at − run_at, ms (Node workers only: HTTP workers do not send it). */
  publish: Record<string, number>;
  /** fenced start − run_at, ms. */
  start: Record<string, number>;
}

export type NodeFamily = "dispatch" | "worker" | "planner" | "api";

export interface NodeIdentity {
  nodeId: string;
  /** Processes may share a node id (CF_NODE_ID) across families: the row is (nodeId, family). */
  family: NodeFamily;
  /** e.g. ["dispatcher", "preloader", "reconciler"] or ["worker"]. */
  roles: string[];
  host: string;
  pid: number;
  startedAtMs: number;
}

export interface NodeRecord extends NodeIdentity {
  seenAtMs: number;
  /** What only the node knows (wheel timers, reconciler runs...), as it reported it. */
  details: Record<string, unknown>;
}

export interface LeaseRecord {
  name: string;
  owner: string;
  epoch: number;
  expiresAtMs: number;
}

export interface AlertRecord {
  tenantId: string;
  key: string;
  kind: string;
  state: "firing" | "resolved";
  message: string;
  details: unknown;
  firedAtMs: number;
  updatedAtMs: number;
}

export interface ClusterStore {
  report(
    node: NodeIdentity,
    details: Record<string, unknown>,
    tenants: ReadonlyMap<string, readonly ActivityBucket[]>,
    nowMs: number,
  ): Promise<void>;
  remove(node: NodeIdentity): Promise<void>;
  forgetBefore(beforeMs: number): Promise<void>;
  nodes(): Promise<NodeRecord[]>;
  leases(): Promise<LeaseRecord[]>;
  /** Every tenant's watchdog alerts, firing first (at most 1,000). */
  alerts(): Promise<AlertRecord[]>;
}
