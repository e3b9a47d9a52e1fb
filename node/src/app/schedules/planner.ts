/**
 * The cron planner: for the shards whose `plan:<shard>` lease this process
 * holds, materialises the next occurrences of their schedules as tasks
 * ahead of time (domain/schedule-plan.ts decides what), a batch of due
 * schedules at a time in one transaction fenced by the leases of the shards
 * it covers, then feeds the hot tier like ingest does.
 *
 * Exactly once per occurrence does not rest on the lease: the database
 * inserts each (schedule_id, scheduled_for) once and creates a task only for
 * the occurrence it inserted, so two planners (a lease handover), a crash
 * between passes or a replay of the same pass create every task once. The
 * lease makes the work efficient (one planner per shard) and keeps a stale
 * planner from writing; task ids are fresh per pass, which is harmless
 * because a losing pass inserts nothing.
 */
import { CronSchedule } from "../../domain/cron.js";
import { type PlanOptions, planSchedule } from "../../domain/schedule-plan.js";
import type { Clock } from "../../ports/clock.js";
import type { DueEntry, HotTier } from "../../ports/hot-tier.js";
import {
  type CursorRow,
  type DueSchedule,
  type OccurrenceRow,
  type PlanStore,
  StalePlanLeaseError,
} from "../../ports/plan-store.js";
import type { PlannerMetrics } from "../../ports/planner-metrics.js";
import type { LeaseManager } from "../shared/leases.js";

export const PLAN_FAMILY = "plan";
const MAX_CACHED_CRONS = 10_000;

export interface PlannerOptions extends PlanOptions {
  nodeId: string;
  /** Schedules per transaction; a full batch asks for another pass at once. */
  batchSize: number;
  /** Created tasks due within this go to the hot tier at once (as at ingest). */
  hotWindowMs: number;
}

export interface PlannerLeases {
  /** Shards of the `plan` family held and valid now, with their epochs. */
  owned(): Array<{ shard: number; epoch: number }>;
  /** The lease turned out stale: forget it now. */
  expire(shard: number): void;
}

/** The planner's view of a lease manager running the `plan` family. */
export function planLeasesOf(manager: LeaseManager): PlannerLeases {
  return {
    owned: () =>
      manager
        .validShards(PLAN_FAMILY)
        .map((shard) => ({ shard, epoch: manager.epochOf(PLAN_FAMILY, shard)! })),
    expire: (shard) => manager.expire(PLAN_FAMILY, shard),
  };
}

export interface PassReport {
  schedules: number;
  tasks: number;
  /** More schedules were due than one batch. */
  more: boolean;
}

export class Planner {
  private readonly crons = new Map<string, CronSchedule>();

  constructor(
    private readonly store: PlanStore,
    private readonly hotTier: Pick<HotTier, "addDue">,
    private readonly clock: Clock,
    private readonly newId: () => string,
    private readonly leases: PlannerLeases,
    private readonly metrics: PlannerMetrics,
    private readonly options: PlannerOptions,
    private readonly onError: (error: unknown, what: string) => void,
  ) {}

  /** One batch of due schedules over every owned shard, then the buffered releases. */
  async pass(): Promise<PassReport> {
    const report: PassReport = { schedules: 0, tasks: 0, more: false };
    const owned = this.leases.owned();
    if (owned.length === 0) return report;
    let nowMs = this.clock.nowMs();
    const due = await this.store.dueSchedules(
      owned.map((o) => o.shard),
      nowMs + this.options.planAheadMs,
      nowMs + this.options.overlapLeadMs,
      this.options.batchSize,
    );
    if (due.length > 0) {
      const created = await this.commit(owned, due, nowMs);
      if (created !== null) {
        report.schedules = due.length;
        report.tasks = created.length;
        report.more = due.length === this.options.batchSize;
        this.feedHotTier(created, nowMs);
      }
    }
    nowMs = this.clock.nowMs();
    const released = await this.store.releaseBuffered(
      owned,
      `${PLAN_FAMILY}:`,
      this.options.nodeId,
      nowMs,
    );
    if (released.length > 0) {
      this.metrics.released(released.length);
      this.feedHotTier(released, nowMs);
    }
    return report;
  }

  private async commit(
    owned: Array<{ shard: number; epoch: number }>,
    due: DueSchedule[],
    nowMs: number,
  ): Promise<DueEntry[] | null> {
    const cursors: CursorRow[] = [];
    const occurrences: OccurrenceRow[] = [];
    for (const schedule of due) {
      const cron = this.cronOf(schedule);
      if (cron === null) continue;
      const plan = planSchedule(
        {
          scheduleId: schedule.id,
          cron,
          misfirePolicy: schedule.misfirePolicy,
          overlapPolicy: schedule.overlapPolicy,
          jitterMs: schedule.jitterMs,
          plannedThroughMs: schedule.plannedThroughMs,
          previousInProgress: schedule.previousInProgress,
          buffered: schedule.buffered,
        },
        nowMs,
        this.options,
      );
      if (plan.misfired) this.metrics.misfired(schedule.misfirePolicy);
      cursors.push({
        id: schedule.id,
        version: schedule.version,
        plannedThroughMs: plan.plannedThroughMs,
        nextOccurrenceMs: plan.nextOccurrenceMs,
      });
      for (const o of plan.occurrences) {
        const hasTask = o.outcome !== "skipped_overlap";
        occurrences.push({
          scheduleId: schedule.id,
          scheduledForMs: o.scheduledForMs,
          outcome: o.outcome,
          taskId: hasTask ? this.newId() : null,
          runAtMs: o.runAtMs,
          catchUp: o.catchUp,
        });
        this.metrics.planned(o.outcome, 1);
      }
    }
    const shards = new Set(due.map((s) => s.planShard));
    const leases = owned
      .filter((o) => shards.has(o.shard))
      .map((o) => ({ name: `${PLAN_FAMILY}:${o.shard}`, epoch: o.epoch }));
    try {
      return await this.store.commit(this.options.nodeId, leases, cursors, occurrences, nowMs);
    } catch (error) {
      if (!(error instanceof StalePlanLeaseError)) throw error;
      this.metrics.staleLease();
      const shard = Number(error.lease.slice(`${PLAN_FAMILY}:`.length));
      if (Number.isInteger(shard)) this.leases.expire(shard);
      return null;
    }
  }

  /**
   * Parsed once per (expression, zone) and shared: a herd of schedules
   * usually shares a handful of expressions. A stored schedule that no
   * longer parses is reported, not planned.
   */
  private cronOf(schedule: DueSchedule): CronSchedule | null {
    const key = `${schedule.expression}\u0000${schedule.timeZone}`;
    const cached = this.crons.get(key);
    if (cached !== undefined) return cached;
    try {
      const cron = CronSchedule.parse(schedule.expression, schedule.timeZone);
      if (this.crons.size >= MAX_CACHED_CRONS) this.crons.clear();
      this.crons.set(key, cron);
      return cron;
    } catch (error) {
      this.onError(error, `schedule ${schedule.id}`);
      return null;
    }
  }

  /** Not awaited, like ingest: a lost add is repaired by the pre-loader's sweep. */
  private feedHotTier(entries: DueEntry[], nowMs: number): void {
    const dueBeforeMs = nowMs + this.options.hotWindowMs;
    const soon = entries.filter((e) => e.runAtMs <= dueBeforeMs);
    if (soon.length === 0) return;
    this.hotTier.addDue(soon).catch((error: unknown) => this.onError(error, "hot tier add"));
  }
}
