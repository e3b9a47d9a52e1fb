/**
 * The operator's cluster page (GET /v1/cluster, CF_ADMIN_TOKEN only): the
 * nodes and their roles, each shard's lease owner and epoch with the timers
 * its owner holds, the other leases (leader, planner and pre-loader shards,
 * membership), the workers' Kafka consumer lag per queue, what the
 * reconciler did lately, and every tenant's watchdog alerts.
 *
 * Nodes and timers come from the nodes' own reports (cluster_nodes, written
 * every CF_NODE_REPORT_INTERVAL_MS); leases straight from the leases table,
 * so a shard whose owner died shows as expired even before anyone reports.
 * Kafka lag is asked of the broker, at most once per LAG_CACHE_MS and never
 * for longer than LAG_TIMEOUT_MS: a broker that is down shows as an error
 * on the page, not as a hung request.
 */
import { HOT_SHARD_COUNT } from "../../domain/shard.js";
import type { Clock } from "../../ports/clock.js";
import type {
  AlertRecord,
  ClusterStore,
  LeaseRecord,
  NodeRecord,
} from "../../ports/cluster-store.js";
import type { ConsumerLag, QueueLag } from "../../ports/consumer-lag.js";
import type { OperatorToken } from "./operator-token.js";

const LAG_CACHE_MS = 2000;
const LAG_TIMEOUT_MS = 3000;

export interface ShardView {
  shard: number;
  owner: string | null;
  epoch: number | null;
  expiresAtMs: number | null;
  live: boolean;
  /** Tasks its owner holds for it (in the wheel or being published), as last reported. */
  timers: number | null;
}

export interface ClusterView {
  nowMs: number;
  nodes: Array<NodeRecord & { live: boolean }>;
  shards: ShardView[];
  leases: Array<LeaseRecord & { live: boolean }>;
  lag: { queues: QueueLag[] } | { error: string };
  /** The reconciler's report of its current leader (or the last one that reported). */
  reconciler: { nodeId: string; activity: unknown } | null;
  alerts: AlertRecord[];
}

export class ClusterService {
  private lagCache: { atMs: number; value: ClusterView["lag"] } | null = null;

  constructor(
    private readonly store: ClusterStore,
    private readonly consumerLag: ConsumerLag,
    private readonly clock: Clock,
    private readonly token: OperatorToken,
    /** A node unseen for this long is shown as gone (3 report intervals). */
    private readonly liveWithinMs: number,
  ) {}

  async view(authorization: string): Promise<ClusterView> {
    this.token.check(authorization);
    const nowMs = this.clock.nowMs();
    const [nodes, leases, alerts, lag] = await Promise.all([
      this.store.nodes(),
      this.store.leases(),
      this.store.alerts(),
      this.lag(nowMs),
    ]);
    const liveNodes = nodes.map((n) => ({ ...n, live: nowMs - n.seenAtMs <= this.liveWithinMs }));
    // Shard and leader leases are held by dispatch-family nodes.
    const byId = new Map(
      liveNodes.filter((n) => n.family === "dispatch").map((n) => [n.nodeId, n]),
    );
    const liveLeases = leases.map((l) => ({ ...l, live: l.expiresAtMs > nowMs }));
    const leaseOf = new Map(liveLeases.map((l) => [l.name, l]));
    const shards: ShardView[] = [];
    for (let shard = 0; shard < HOT_SHARD_COUNT; shard++) {
      const lease = leaseOf.get(`shard:${shard}`);
      const owner = lease && byId.get(lease.owner);
      shards.push({
        shard,
        owner: lease?.owner ?? null,
        epoch: lease?.epoch ?? null,
        expiresAtMs: lease?.expiresAtMs ?? null,
        live: lease?.live ?? false,
        timers: lease?.live && owner ? heldOf(owner.details, shard) : null,
      });
    }
    const leader = leaseOf.get("leader");
    const reconcilerNode =
      (leader && byId.get(leader.owner)) ?? liveNodes.find((n) => "reconciler" in n.details);
    return {
      nowMs,
      nodes: liveNodes,
      shards,
      leases: liveLeases,
      lag,
      reconciler: reconcilerNode
        ? { nodeId: reconcilerNode.nodeId, activity: reconcilerNode.details.reconciler ?? null }
        : null,
      alerts,
    };
  }

  private async lag(nowMs: number): Promise<ClusterView["lag"]> {
    if (this.lagCache && nowMs - this.lagCache.atMs < LAG_CACHE_MS && nowMs >= this.lagCache.atMs)
      return this.lagCache.value;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("Kafka did not answer in time")), LAG_TIMEOUT_MS);
    });
    let value: ClusterView["lag"];
    try {
      value = { queues: await Promise.race([this.consumerLag.lag(), late]) };
    } catch (error) {
      value = { error: error instanceof Error ? error.message : String(error) };
    } finally {
      clearTimeout(timer);
    }
    this.lagCache = { atMs: nowMs, value };
    return value;
  }
}

function heldOf(details: Record<string, unknown>, shard: number): number | null {
  const dispatcher = details.dispatcher as { shards?: Record<string, number> } | undefined;
  const held = dispatcher?.shards?.[String(shard)];
  return typeof held === "number" ? held : null;
}
