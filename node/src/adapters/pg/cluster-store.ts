/**
 * The Postgres ClusterStore (contract: ports/cluster-store.ts; SQL:
 * sql/cluster.ts). Nodes write through a login-role pool; the API reads
 * through its own (chronofence_api).
 */
import type {
  ActivityBucket,
  AlertRecord,
  ClusterStore,
  LeaseRecord,
  NodeIdentity,
  NodeRecord,
} from "../../ports/cluster-store.js";
import { alertOf, bucketsJson } from "./dashboard-store.js";
import { roundMs } from "./epoch-ms.js";
import { fromPgError } from "./errors.js";
import type { PgPool } from "./pool.js";
import {
  ALL_ALERTS,
  FORGET_NODES,
  LEASES,
  NODES,
  REMOVE_NODE,
  REPORT_NODE,
} from "./sql/cluster.js";

// biome-ignore lint/suspicious/noExplicitAny: rows of sql/cluster.ts, read field by field
type Row = any;

export class PgClusterStore implements ClusterStore {
  constructor(private readonly pool: PgPool) {}

  async report(
    node: NodeIdentity,
    details: Record<string, unknown>,
    tenants: ReadonlyMap<string, readonly ActivityBucket[]>,
    nowMs: number,
  ): Promise<void> {
    const entries = [...tenants];
    await this.run("report node", REPORT_NODE, [
      node.nodeId,
      node.roles,
      node.host,
      node.pid,
      node.startedAtMs,
      nowMs,
      JSON.stringify(details),
      entries.map(([tenantId]) => tenantId),
      entries.map(([, buckets]) => bucketsJson(buckets)),
      node.family,
    ]);
  }

  async remove(node: NodeIdentity): Promise<void> {
    await this.run("remove node", REMOVE_NODE, [node.nodeId, node.family]);
  }

  async forgetBefore(beforeMs: number): Promise<void> {
    await this.run("forget nodes", FORGET_NODES, [beforeMs]);
  }

  async nodes(): Promise<NodeRecord[]> {
    const rows = await this.run("read nodes", NODES, []);
    return rows.map((r) => ({
      nodeId: r.node_id,
      family: r.family,
      roles: r.roles,
      host: r.host,
      pid: r.pid,
      startedAtMs: roundMs(r.started_at_ms),
      seenAtMs: roundMs(r.seen_at_ms),
      details: r.report ?? {},
    }));
  }

  async leases(): Promise<LeaseRecord[]> {
    const rows = await this.run("read leases", LEASES, []);
    return rows.map((r) => ({
      name: r.name,
      owner: r.owner,
      epoch: r.epoch,
      expiresAtMs: roundMs(r.expires_at_ms),
    }));
  }

  async alerts(): Promise<AlertRecord[]> {
    return (await this.run("read alerts", ALL_ALERTS, [])).map(alertOf);
  }

  private async run(what: string, sql: string, params: unknown[]): Promise<Row[]> {
    try {
      return (await this.pool.query(sql, params)).rows;
    } catch (error) {
      throw fromPgError(error, what);
    }
  }
}
