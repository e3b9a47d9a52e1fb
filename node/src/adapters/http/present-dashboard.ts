/**
 * The JSON shapes of the dashboard's routes (docs/dashboard.md, "API"):
 * snake_case, RFC 3339 times, lateness and durations in ms. Each presenter
 * returns its documented schema's output (openapi/dashboard-resources.ts),
 * so a field added, dropped or renamed here fails the type check until the
 * document says the same.
 */
import type { z } from "zod";
import type { ClusterView } from "../../app/dashboard/cluster.js";
import type {
  FireInstant,
  ScheduleInsight,
  SwitchState,
} from "../../app/dashboard/schedule-insight.js";
import type { TaskHistory } from "../../app/dashboard/task-history.js";
import type { LatenessSummary, TenantStats } from "../../app/dashboard/tenant-stats.js";
import type { TaskStatus } from "../../domain/task.js";
import type { AlertRecord } from "../../ports/cluster-store.js";
import type {
  AttemptRecord,
  DeadLetterRecord,
  WorkflowSummary,
} from "../../ports/dashboard-store.js";
import type {
  AlertResource,
  ClusterResource,
  DeadLetterResource,
  ScheduleUpcoming,
  StatsResource,
  TaskHistoryResource,
  WorkflowSummaryResource,
} from "./openapi/dashboard-resources.js";
import type { TaskResource } from "./openapi/resources.js";
import { presentTask } from "./present.js";

type Out<S extends z.ZodType> = z.output<S>;
type Alert = Out<typeof AlertResource>;
type TaskOutcome = NonNullable<Out<typeof TaskHistoryResource>["timeline"][number]["outcome"]>;
type Attempt = Out<typeof TaskHistoryResource>["attempts"][number];

const iso = (epochMs: number): string => new Date(epochMs).toISOString();
const isoOrNull = (epochMs: number | null | undefined): string | null =>
  epochMs === null || epochMs === undefined || !Number.isFinite(epochMs) ? null : iso(epochMs);

const lateness = (l: LatenessSummary) => ({ p50_ms: l.p50Ms, p99_ms: l.p99Ms, count: l.count });

export function presentStats(s: TenantStats): Out<typeof StatsResource> {
  return {
    now: iso(s.nowMs),
    window_ms: s.windowMs,
    counts: {
      by_state: s.byState,
      counted_rows: s.countedRows,
      capped: s.capped,
      counted_since: isoOrNull(s.countedSinceMs),
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

export function presentAlert(a: AlertRecord): Alert {
  return {
    tenant_id: a.tenantId,
    key: a.key,
    // The table's CHECK holds kind to the two the report accepts.
    kind: a.kind as Alert["kind"],
    state: a.state,
    message: a.message,
    details: a.details,
    fired_at: iso(a.firedAtMs),
    updated_at: iso(a.updatedAtMs),
  };
}

export function presentHistory(h: TaskHistory): Out<typeof TaskHistoryResource> {
  return {
    task: presentTask(h.task) as Out<typeof TaskResource>,
    fencing_token: h.fencingToken,
    lease_owner: h.leaseOwner,
    lease_expires_at: isoOrNull(h.leaseExpiresAtMs),
    dispatch_shard: h.dispatchShard,
    dispatch_epoch: h.dispatchEpoch,
    timeline: h.stages.map((s) => ({
      stage: s.stage,
      at: isoOrNull(s.atMs),
      lateness_ms: s.latenessMs,
      ...(s.outcome !== undefined && { outcome: s.outcome as TaskOutcome }),
    })),
    attempts: h.attempts.map(presentAttempt),
  };
}

function presentAttempt(a: AttemptRecord): Attempt {
  return {
    attempt: a.attempt,
    outcome: a.outcome,
    fencing_token: a.fencingToken,
    worker_id: a.workerId,
    dispatched_at: isoOrNull(a.dispatchedAtMs),
    started_at: isoOrNull(a.startedAtMs),
    ended_at: isoOrNull(a.endedAtMs),
    duration_ms:
      a.startedAtMs !== null && a.endedAtMs !== null ? a.endedAtMs - a.startedAtMs : null,
    error: a.error,
    ...(a.result !== undefined && { result: a.result }),
  };
}

export function presentDeadLetter(d: DeadLetterRecord): Out<typeof DeadLetterResource> {
  return {
    id: d.id,
    task_id: d.taskId,
    type: d.type,
    payload: d.payload,
    attempt: d.attempt,
    max_attempts: d.maxAttempts,
    fencing_token: d.fencingToken,
    error: d.error,
    // The table's CHECK holds reason to the three of the schema.
    reason: d.reason as Out<typeof DeadLetterResource>["reason"],
    worker_id: d.workerId,
    run_at: iso(d.runAtMs),
    dead_at: iso(d.deadAtMs),
    replayed_at: isoOrNull(d.replayedAtMs),
  };
}

export function presentWorkflowSummary(w: WorkflowSummary): Out<typeof WorkflowSummaryResource> {
  return {
    id: w.id,
    status: w.status as Out<typeof WorkflowSummaryResource>["status"],
    fail_fast: w.failFast,
    node_count: w.nodeCount,
    pending_nodes: w.pendingNodes,
    dead_nodes: w.deadNodes,
    created_at: iso(w.createdAtMs),
    updated_at: iso(w.updatedAtMs),
    finished_at: isoOrNull(w.finishedAtMs),
  };
}

const presentFire = (f: FireInstant) => ({ at: iso(f.atMs), local: f.local });

export function presentInsight(i: ScheduleInsight): Out<typeof ScheduleUpcoming> {
  return {
    id: i.id,
    time_zone: i.timeZone,
    paused: i.paused,
    next: i.next.map(presentFire),
    dead_mans_switch: presentSwitch(i.deadMansSwitch),
  };
}

function presentSwitch(s: SwitchState): Out<typeof ScheduleUpcoming>["dead_mans_switch"] {
  if (s.state !== "tripped") {
    return s.state === "ok" ? { state: "ok", expect_within_ms: s.expectWithinMs } : s;
  }
  return {
    state: "tripped",
    expect_within_ms: s.expectWithinMs,
    scheduled_for: iso(s.scheduledForMs),
    // A task's state as the history read it, or null once retention dropped the task.
    status: s.status as TaskStatus | null,
  };
}

export function presentCluster(c: ClusterView): Out<typeof ClusterResource> {
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
      expires_at: isoOrNull(s.expiresAtMs),
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
