/**
 * The JSON shapes of the dashboard's routes (docs/dashboard.md, "API"):
 * snake_case, RFC 3339 times, lateness and durations in ms.
 */
import type { ClusterView } from "../../app/dashboard/cluster.js";
import type { FireInstant, ScheduleInsight } from "../../app/dashboard/schedule-insight.js";
import type { TaskHistory } from "../../app/dashboard/task-history.js";
import type { LatenessSummary, TenantStats } from "../../app/dashboard/tenant-stats.js";
import type { AlertRecord } from "../../ports/cluster-store.js";
import type {
  AttemptRecord,
  DeadLetterRecord,
  WorkflowSummary,
} from "../../ports/dashboard-store.js";
import { presentTask } from "./present.js";

const iso = (epochMs: number | null | undefined): string | null =>
  epochMs === null || epochMs === undefined || !Number.isFinite(epochMs)
    ? null
    : new Date(epochMs).toISOString();

const lateness = (l: LatenessSummary) => ({ p50_ms: l.p50Ms, p99_ms: l.p99Ms, count: l.count });

export function presentStats(s: TenantStats): Record<string, unknown> {
  return {
    now: iso(s.nowMs),
    window_ms: s.windowMs,
    counts: {
      by_state: s.byState,
      counted_rows: s.countedRows,
      capped: s.capped,
      counted_since: iso(s.countedSinceMs),
    },
    overdue: s.overdue,
    open_dead_letters: s.openDeadLetters,
    completed_per_s: s.completedPerS,
    failed_per_s: s.failedPerS,
    window: { completed: s.completed, failed: s.failed, dead: s.dead },
    publish_lateness: lateness(s.publishLateness),
    start_lateness: lateness(s.startLateness),
    series: s.series.map((p) => ({
      at: iso(p.startMs),
      completed_per_s: p.completedPerS,
      failed_per_s: p.failedPerS,
      publish_p99_ms: p.publishP99Ms,
      start_p50_ms: p.startP50Ms,
      start_p99_ms: p.startP99Ms,
    })),
    alerts: s.alerts.map(presentAlert),
  };
}

export function presentAlert(a: AlertRecord): Record<string, unknown> {
  return {
    tenant_id: a.tenantId,
    key: a.key,
    kind: a.kind,
    state: a.state,
    message: a.message,
    details: a.details,
    fired_at: iso(a.firedAtMs),
    updated_at: iso(a.updatedAtMs),
  };
}

export function presentHistory(h: TaskHistory): Record<string, unknown> {
  return {
    task: presentTask(h.task),
    fencing_token: h.fencingToken,
    lease_owner: h.leaseOwner,
    lease_expires_at: iso(h.leaseExpiresAtMs),
    dispatch_shard: h.dispatchShard,
    dispatch_epoch: h.dispatchEpoch,
    timeline: h.stages.map((s) => ({
      stage: s.stage,
      at: iso(s.atMs),
      lateness_ms: s.latenessMs,
      ...(s.outcome !== undefined && { outcome: s.outcome }),
    })),
    attempts: h.attempts.map(presentAttempt),
  };
}

function presentAttempt(a: AttemptRecord): Record<string, unknown> {
  return {
    attempt: a.attempt,
    outcome: a.outcome,
    fencing_token: a.fencingToken,
    worker_id: a.workerId,
    dispatched_at: iso(a.dispatchedAtMs),
    started_at: iso(a.startedAtMs),
    ended_at: iso(a.endedAtMs),
    duration_ms:
      a.startedAtMs !== null && a.endedAtMs !== null ? a.endedAtMs - a.startedAtMs : null,
    error: a.error,
    ...(a.result !== undefined && { result: a.result }),
  };
}

export function presentDeadLetter(d: DeadLetterRecord): Record<string, unknown> {
  return {
    id: d.id,
    task_id: d.taskId,
    type: d.type,
    payload: d.payload,
    attempt: d.attempt,
    max_attempts: d.maxAttempts,
    fencing_token: d.fencingToken,
    error: d.error,
    reason: d.reason,
    worker_id: d.workerId,
    run_at: iso(d.runAtMs),
    dead_at: iso(d.deadAtMs),
    replayed_at: iso(d.replayedAtMs),
  };
}

export function presentWorkflowSummary(w: WorkflowSummary): Record<string, unknown> {
  return {
    id: w.id,
    status: w.status,
    fail_fast: w.failFast,
    node_count: w.nodeCount,
    pending_nodes: w.pendingNodes,
    dead_nodes: w.deadNodes,
    created_at: iso(w.createdAtMs),
    updated_at: iso(w.updatedAtMs),
    finished_at: iso(w.finishedAtMs),
  };
}

const presentFire = (f: FireInstant) => ({ at: iso(f.atMs), local: f.local });

export function presentInsight(i: ScheduleInsight): Record<string, unknown> {
  const s = i.deadMansSwitch;
  return {
    id: i.id,
    time_zone: i.timeZone,
    paused: i.paused,
    next: i.next.map(presentFire),
    dead_mans_switch: {
      state: s.state,
      ...("expectWithinMs" in s && { expect_within_ms: s.expectWithinMs }),
      ...(s.state === "tripped" && { scheduled_for: iso(s.scheduledForMs), status: s.status }),
    },
  };
}

export function presentCluster(c: ClusterView): Record<string, unknown> {
  return {
    now: iso(c.nowMs),
    nodes: c.nodes.map((n) => ({
      node_id: n.nodeId,
      roles: n.roles,
      host: n.host,
      pid: n.pid,
      started_at: iso(n.startedAtMs),
      seen_at: iso(n.seenAtMs),
      live: n.live,
      report: n.details,
    })),
    shards: c.shards.map((s) => ({
      shard: s.shard,
      owner: s.owner,
      epoch: s.epoch,
      expires_at: iso(s.expiresAtMs),
      live: s.live,
      timers: s.timers,
    })),
    leases: c.leases.map((l) => ({
      name: l.name,
      owner: l.owner,
      epoch: l.epoch,
      expires_at: iso(l.expiresAtMs),
      live: l.live,
    })),
    kafka_lag: "error" in c.lag ? { error: c.lag.error } : { queues: c.lag.queues },
    reconciler: c.reconciler && { node_id: c.reconciler.nodeId, activity: c.reconciler.activity },
    alerts: c.alerts.map(presentAlert),
  };
}
