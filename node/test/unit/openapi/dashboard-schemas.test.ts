/**
 * The dashboard's presenters (present-dashboard.ts) against the answers the
 * OpenAPI document gives for them (dashboard-resources.ts), parsed
 * strictly, in every variant a real answer rarely shows at once: a tripped
 * dead man's switch with and without its task, a Kafka lag error, no
 * reconciler, a capped count, empty percentiles, an attempt with a result
 * and one without. integration/dashboard-api.test.ts parses the real
 * answers the same way.
 */
import { describe, expect, it } from "vitest";
import {
  AlertResource,
  ClusterResource,
  DeadLetterResource,
  ScheduleUpcoming,
  StatsResource,
  TaskHistoryResource,
  WorkflowSummaryResource,
} from "../../../src/adapters/http/openapi/dashboard-resources.js";
import {
  presentAlert,
  presentCluster,
  presentDeadLetter,
  presentHistory,
  presentInsight,
  presentStats,
  presentWorkflowSummary,
} from "../../../src/adapters/http/present-dashboard.js";
import type { ClusterView } from "../../../src/app/dashboard/cluster.js";
import type { ScheduleInsight, SwitchState } from "../../../src/app/dashboard/schedule-insight.js";
import { historyOf } from "../../../src/app/dashboard/task-history.js";
import type { TenantStats } from "../../../src/app/dashboard/tenant-stats.js";
import type { Task } from "../../../src/domain/task.js";
import type { AlertRecord } from "../../../src/ports/cluster-store.js";
import type { TaskHistoryRecord } from "../../../src/ports/dashboard-store.js";

const T0 = 1_700_000_000_000;
const ID = "01a00000-0000-7000-8000-000000000001";
const TENANT = "01a00000-0000-7000-8000-0000000000aa";

const task = (over: Partial<Task> = {}): Task => ({
  id: ID,
  tenantId: TENANT,
  type: "report.build",
  payload: { n: 1 },
  priority: "standard",
  status: "COMPLETED",
  runAtMs: T0,
  attempt: 2,
  maxAttempts: 3,
  timeoutMs: 1000,
  backoff: { strategy: "fixed", baseMs: 1, maxMs: 1 },
  idempotencyKey: null,
  fencingToken: "9",
  result: { pages: 12 },
  lastError: null,
  workflowId: null,
  scheduleId: null,
  createdAtMs: T0 - 5000,
  updatedAtMs: T0 + 500,
  cancelledAtMs: null,
  finishedAtMs: T0 + 500,
  ...over,
});

const alert: AlertRecord = {
  tenantId: TENANT,
  key: "canary",
  kind: "canary",
  state: "firing",
  message: "canary task not COMPLETED within 120000 ms",
  details: { age_ms: 130_000 },
  firedAtMs: T0,
  updatedAtMs: T0 + 10,
};

describe("the dashboard's answers match their documented schemas", () => {
  it("stats: capped counts, empty percentiles, a series and alerts", () => {
    const stats: TenantStats = {
      nowMs: T0,
      windowMs: 300_000,
      byState: [{ status: "DEAD", priority: "bulk", count: 3 }],
      countedRows: 100_000,
      capped: true,
      countedSinceMs: T0 - 86_400_000,
      overdue: 2,
      openDeadLetters: 3,
      completedPerS: 0.5,
      failedPerS: 0,
      completed: 30,
      failed: 1,
      dead: 1,
      publishLateness: { p50Ms: null, p99Ms: null, count: 0 },
      startLateness: { p50Ms: 1.68, p99Ms: 1024, count: 31 },
      series: [
        {
          startMs: T0 - 10_000,
          completedPerS: 0.1,
          failedPerS: 0,
          publishP99Ms: null,
          startP50Ms: 2,
          startP99Ms: 4,
        },
      ],
      alerts: [alert],
    };
    const out = presentStats(stats);
    expect(StatsResource.parse(out)).toEqual(out);
    expect(() => StatsResource.parse({ ...out, extra: 1 }), "strict").toThrow();
    const empty = presentStats({ ...stats, countedSinceMs: null, byState: [], alerts: [] });
    StatsResource.parse(empty);
  });

  it("alerts, firing and resolved", () => {
    AlertResource.parse(presentAlert(alert));
    AlertResource.parse(presentAlert({ ...alert, state: "resolved", details: {} }));
  });

  it("a task's history: retried then completed with a result, and one still scheduled", () => {
    const record: TaskHistoryRecord = {
      task: task(),
      fencingToken: "9",
      leaseOwner: "w-2",
      leaseExpiresAtMs: T0 + 30_000,
      dispatchShard: 3,
      dispatchEpoch: 2,
      armedAtMs: T0 - 2000,
      dispatchedAtMs: null,
      startedAtMs: T0 + 10,
      completedAtMs: T0 + 500,
      failedAtMs: T0 - 3000,
      deadAtMs: null,
      skippedAtMs: null,
      attempts: [
        {
          attempt: 1,
          fencingToken: "7",
          workerId: "w-1",
          dispatchedAtMs: null,
          startedAtMs: T0 - 3500,
          endedAtMs: T0 - 3000,
          outcome: "retried",
          error: { message: "upstream said 503", code: "http_503" },
        },
      ],
    };
    const completed = presentHistory(historyOf(record));
    expect(completed.attempts.map((a) => a.outcome)).toEqual(["retried", "completed"]);
    expect(TaskHistoryResource.parse(completed)).toEqual(completed);
    const scheduled = presentHistory(
      historyOf({
        ...record,
        task: task({ status: "SCHEDULED", result: null, finishedAtMs: null }),
        leaseOwner: null,
        leaseExpiresAtMs: null,
        dispatchShard: null,
        dispatchEpoch: null,
        fencingToken: null,
        armedAtMs: null,
        startedAtMs: null,
        completedAtMs: null,
        attempts: [],
      }),
    );
    expect(scheduled.timeline.at(-1)).toEqual({ stage: "finished", at: null, lateness_ms: null });
    TaskHistoryResource.parse(scheduled);
  });

  it("a dead letter, open and replayed; a workflow, running and finished", () => {
    const letter = {
      id: "01a00000-0000-7000-8000-0000000000d1",
      taskId: ID,
      type: "report.build",
      payload: null,
      attempt: 3,
      maxAttempts: 3,
      fencingToken: "12",
      error: { message: "bad input" },
      reason: "non_retryable",
      workerId: null,
      runAtMs: T0,
      deadAtMs: T0 + 1.5,
      replayedAtMs: null,
    };
    DeadLetterResource.parse(presentDeadLetter(letter));
    DeadLetterResource.parse(presentDeadLetter({ ...letter, replayedAtMs: T0 + 9, workerId: "w" }));
    const workflow = {
      id: ID,
      status: "RUNNING",
      failFast: false,
      nodeCount: 2,
      pendingNodes: 1,
      deadNodes: 0,
      createdAtMs: T0,
      updatedAtMs: T0,
      finishedAtMs: null,
    };
    WorkflowSummaryResource.parse(presentWorkflowSummary(workflow));
    WorkflowSummaryResource.parse(
      presentWorkflowSummary({ ...workflow, status: "FAILED", finishedAtMs: T0 + 1 }),
    );
  });

  it.each<[string, SwitchState]>([
    ["off", { state: "off" }],
    ["paused", { state: "paused" }],
    ["ok", { state: "ok", expectWithinMs: 60_000 }],
    ["tripped", { state: "tripped", expectWithinMs: 60_000, scheduledForMs: T0, status: "DEAD" }],
    [
      "tripped, task gone",
      { state: "tripped", expectWithinMs: 60_000, scheduledForMs: T0, status: null },
    ],
  ])("a schedule's upcoming fires, switch %s", (_, deadMansSwitch) => {
    const insight: ScheduleInsight = {
      id: ID,
      timeZone: "Europe/Berlin",
      paused: deadMansSwitch.state === "paused",
      next: [{ atMs: T0, local: "2023-11-14T23:13:20+01:00" }],
      deadMansSwitch,
    };
    const out = presentInsight(insight);
    expect(ScheduleUpcoming.parse(out)).toEqual(out);
  });

  it("the cluster: lag per queue or its error, a reconciler or none", () => {
    const view: ClusterView = {
      nowMs: T0,
      nodes: [
        {
          nodeId: "n1",
          family: "dispatch",
          roles: ["dispatcher", "reconciler"],
          host: "h",
          pid: 42,
          startedAtMs: T0 - 60_000,
          seenAtMs: T0 - 1000,
          details: { dispatcher: { shards: { "0": 5 } } },
          live: true,
        },
      ],
      shards: [
        { shard: 0, owner: "n1", epoch: 7, expiresAtMs: T0 + 5000, live: true, timers: 5 },
        { shard: 1, owner: null, epoch: null, expiresAtMs: null, live: false, timers: null },
      ],
      leases: [{ name: "leader", owner: "n1", epoch: 3, expiresAtMs: T0 + 5000, live: true }],
      lag: {
        queues: [
          {
            queue: "critical",
            topic: "tasks.critical",
            group: "cf-workers-critical",
            lag: 4,
            partitions: [{ partition: 0, latest: 10, committed: null }],
          },
        ],
      },
      reconciler: { nodeId: "n1", activity: { runs: 3 } },
      alerts: [alert],
    };
    const out = presentCluster(view);
    expect(ClusterResource.parse(out)).toEqual(out);
    ClusterResource.parse(
      presentCluster({ ...view, lag: { error: "Kafka did not answer in time" }, reconciler: null }),
    );
  });
});
