/**
 * What the dashboard's routes answer (docs/dashboard.md, "API"), as zod
 * schemas, as resources.ts does for the other routes: the presenters of
 * present-dashboard.ts return each schema's `z.output` (so tsc holds them
 * to it), the OpenAPI document is generated from them, the client's types
 * are their `z.output`, and the tests parse real answers with them,
 * strictly (integration/dashboard-api.test.ts, unit/openapi/dashboard-schemas.test.ts).
 */
import { z } from "zod";
import { TOPICS } from "../../../domain/envelope.js";
import { PRIORITIES } from "../../../domain/task.js";
import { count, cursor, instant, status, TaskResource, uuid, workflowStatus } from "./resources.js";

const ms = z.number().int();
const perSecond = z.number().min(0);
const percentile = z
  .number()
  .min(1)
  .nullable()
  .describe("ms: the upper bound of its histogram bin, within 19% above the truth; null: none");
const lateness = z.strictObject({ p50_ms: percentile, p99_ms: percentile, count });

export const AlertResource = z
  .strictObject({
    tenant_id: uuid,
    key: z.string(),
    kind: z.enum(["canary", "dead_mans_switch"]),
    state: z.enum(["firing", "resolved"]),
    message: z.string(),
    details: z.unknown(),
    fired_at: instant.describe(
      "Firing: when it started firing. Resolved: when the resolution was reported.",
    ),
    updated_at: instant,
  })
  .meta({ id: "Alert", description: "A watchdog alert as last reported." });

export const StatsResource = z
  .strictObject({
    now: instant,
    window_ms: count,
    counts: z.strictObject({
      by_state: z.array(z.strictObject({ status, priority: z.enum(PRIORITIES), count })),
      counted_rows: count,
      capped: z.boolean().describe("More tasks than were counted (the newest 100,000)."),
      counted_since: instant.nullable().describe("Creation of the oldest task counted."),
    }),
    overdue: count,
    open_dead_letters: count,
    completed_per_s: perSecond.describe("Over the last full minute."),
    failed_per_s: perSecond,
    window: z.strictObject({ completed: count, failed: count, dead: count }),
    publish_lateness: lateness.describe("dispatched_at − run_at over the window (Node workers)."),
    start_lateness: lateness.describe("Fenced start − run_at over the window."),
    series: z
      .array(
        z.strictObject({
          at: instant.describe("The bucket's start; buckets are 10 s."),
          completed_per_s: perSecond,
          failed_per_s: perSecond,
          publish_p99_ms: percentile,
          start_p50_ms: percentile,
          start_p99_ms: percentile,
        }),
      )
      .describe("The window's buckets, oldest first; the last is still filling."),
    alerts: z.array(AlertResource),
  })
  .meta({ id: "Stats", description: "A tenant's Overview: counts, rates, lateness, alerts." });

const attemptOutcome = z.enum([
  "retried",
  "dead",
  "interrupted",
  "cancelled",
  "running",
  "completed",
]);

export const TaskHistoryResource = z
  .strictObject({
    task: TaskResource,
    fencing_token: z.string().nullable(),
    lease_owner: z.string().nullable(),
    lease_expires_at: instant.nullable(),
    dispatch_shard: count.nullable(),
    dispatch_epoch: count.nullable(),
    timeline: z.array(
      z.strictObject({
        stage: z.enum(["created", "armed", "published", "started", "finished"]),
        at: instant.nullable().describe("null: not (yet) in the current attempt."),
        lateness_ms: ms.nullable().describe("at − run_at; negative is ahead of it."),
        outcome: z.enum(["COMPLETED", "DEAD", "CANCELLED", "SKIPPED"]).optional(),
      }),
    ),
    attempts: z.array(
      z.strictObject({
        attempt: count,
        outcome: attemptOutcome,
        fencing_token: z.string().nullable(),
        worker_id: z.string().nullable(),
        dispatched_at: instant.nullable(),
        started_at: instant.nullable(),
        ended_at: instant.nullable(),
        duration_ms: ms.nullable(),
        error: z.unknown().describe("The failure without its details, or null."),
        result: z.unknown().optional().describe("The completed attempt's result."),
      }),
    ),
  })
  .meta({ id: "TaskHistory", description: "A task's timeline and every attempt." });

export const DeadLetterResource = z
  .strictObject({
    id: uuid,
    task_id: uuid,
    type: z.string(),
    payload: z.unknown(),
    attempt: count,
    max_attempts: count,
    fencing_token: z.string(),
    error: z.unknown(),
    reason: z.enum(["exhausted", "non_retryable", "lease_expired"]),
    worker_id: z.string().nullable(),
    run_at: instant,
    dead_at: instant,
    replayed_at: instant.nullable(),
  })
  .meta({ id: "DeadLetter" });

export const DeadLetterPage = z
  .strictObject({ dead_letters: z.array(DeadLetterResource), next_cursor: cursor })
  .meta({ id: "DeadLetterPage" });

export const WorkflowSummaryResource = z
  .strictObject({
    id: uuid,
    status: workflowStatus,
    fail_fast: z.boolean(),
    node_count: count,
    pending_nodes: count,
    dead_nodes: count,
    created_at: instant,
    updated_at: instant,
    finished_at: instant.nullable(),
  })
  .meta({ id: "WorkflowSummary", description: "A workflow without its nodes." });

export const WorkflowPage = z
  .strictObject({ workflows: z.array(WorkflowSummaryResource), next_cursor: cursor })
  .meta({ id: "WorkflowPage" });

const deadMansSwitch = z.union([
  z.strictObject({ state: z.literal("off") }),
  z.strictObject({ state: z.literal("paused") }),
  z.strictObject({ state: z.literal("ok"), expect_within_ms: count }),
  z.strictObject({
    state: z.literal("tripped"),
    expect_within_ms: count,
    scheduled_for: instant.describe("The occurrence that was not COMPLETED in time."),
    status: status.nullable().describe("Its task's state; null once retention dropped it."),
  }),
]);

export const ScheduleUpcoming = z
  .strictObject({
    id: uuid,
    time_zone: z.string(),
    paused: z.boolean(),
    next: z.array(
      z.strictObject({
        at: instant,
        local: z
          .string()
          .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$/)
          .describe("The same instant in the schedule's zone, with its offset."),
      }),
    ),
    dead_mans_switch: deadMansSwitch,
  })
  .meta({ id: "ScheduleUpcoming", description: "A schedule's next fire instants and switch." });

export const AlertReported = z
  .strictObject({ key: z.string(), state: z.enum(["firing", "resolved"]) })
  .meta({ id: "AlertReported" });

const nullableCount = count.nullable();
export const ClusterResource = z
  .strictObject({
    now: instant,
    nodes: z.array(
      z.strictObject({
        node_id: z.string(),
        roles: z.array(z.string()),
        host: z.string(),
        pid: count,
        started_at: instant,
        seen_at: instant,
        live: z.boolean(),
        report: z.record(z.string(), z.unknown()).describe("What only the node knows."),
      }),
    ),
    shards: z.array(
      z.strictObject({
        shard: count,
        owner: z.string().nullable(),
        epoch: nullableCount,
        expires_at: instant.nullable(),
        live: z.boolean(),
        timers: nullableCount.describe("Tasks its live owner holds for it, as last reported."),
      }),
    ),
    leases: z.array(
      z.strictObject({
        name: z.string(),
        owner: z.string(),
        epoch: count,
        expires_at: instant,
        live: z.boolean(),
      }),
    ),
    kafka_lag: z.union([
      z.strictObject({
        queues: z.array(
          z.strictObject({
            queue: z.enum(TOPICS),
            topic: z.string(),
            group: z.string(),
            lag: count,
            partitions: z.array(
              z.strictObject({ partition: count, latest: count, committed: nullableCount }),
            ),
          }),
        ),
      }),
      z.strictObject({ error: z.string() }),
    ]),
    reconciler: z.strictObject({ node_id: z.string(), activity: z.unknown() }).nullable(),
    alerts: z.array(AlertResource),
  })
  .meta({ id: "Cluster", description: "The operator's view of every node, lease and alert." });
