import pg from "pg";
import type { ArmedTask } from "../../domain/envelope.js";
import { shardLeaseName } from "../../domain/fair-share.js";
import type {
  ArmBatch,
  ArmResult,
  DispatchStore,
  ScheduledEntry,
  ShardCursor,
} from "../../ports/dispatch-store.js";
import { plainArray } from "./array-param.js";
import { type DayPartitionStatement, onDayPartition } from "./day-partition.js";
import { isoOfMs, roundMs } from "./epoch-ms.js";
import { fromPgError } from "./errors.js";
import type { PgPool } from "./pool.js";
import { ARM_TASKS, armTasks, REARM_STALE, SCHEDULED_BEFORE } from "./sql/dispatch.js";

/** pg's own parser of an int4[] (type oid 1007) in text form. */
const parseIntArray: (text: string) => number[] = pg.types.getTypeParser(
  1007 as Parameters<typeof pg.types.getTypeParser>[0],
);

/** The arm on the claims' day's partition, prepared (day-partition.ts). */
const ARM: DayPartitionStatement = { onTasks: ARM_TASKS, on: armTasks, name: "cf_arm_tasks" };

/** The dispatcher roles' view of Postgres: all tenants, as chronofence_dispatch (migrations/000011). */
export class PgDispatchStore implements DispatchStore {
  constructor(private readonly pool: PgPool) {}

  async arm(batches: readonly ArmBatch[], nowMs: number): Promise<ArmResult[]> {
    const withClaims = batches.filter((b) => b.claims.length > 0);
    if (withClaims.length === 0) return batches.map(() => ({ fenced: true, armed: [] }));
    const ids: string[] = [];
    const runAtsMs: number[] = [];
    const shards: number[] = [];
    let minMs = Number.POSITIVE_INFINITY;
    let maxMs = Number.NEGATIVE_INFINITY;
    for (const { fence, claims } of withClaims) {
      for (const c of claims) {
        ids.push(c.taskId);
        runAtsMs.push(c.runAtMs);
        shards.push(fence.shard);
        if (c.runAtMs < minMs) minMs = c.runAtMs;
        if (c.runAtMs > maxMs) maxMs = c.runAtMs;
      }
    }
    let rows: ArmedRow[];
    try {
      const days = [{ runAtMs: minMs }, { runAtMs: maxMs }];
      const result = await onDayPartition(this.pool, ARM, days, [
        withClaims.map((b) => b.fence.shard),
        withClaims.map((b) => shardLeaseName(b.fence.shard)),
        withClaims.map((b) => b.fence.owner),
        withClaims.map((b) => b.fence.epoch),
        nowMs,
        plainArray(ids),
        plainArray(runAtsMs),
        plainArray(shards),
        isoOfMs(minMs),
        isoOfMs(maxMs),
      ]);
      rows = result.rows;
    } catch (error) {
      throw fromPgError(error, "arm tasks");
    }
    const fencedShards = new Set(rows[0] === undefined ? [] : parseIntArray(rows[0].fenced_shards));
    const armedByShard = new Map<number, ArmedTask[]>();
    for (const row of rows) {
      if (row.id === null) continue;
      const armed = armedByShard.get(row.shard) ?? [];
      if (armed.length === 0) armedByShard.set(row.shard, armed);
      armed.push(toArmedTask(row));
    }
    return batches.map(({ fence, claims }) =>
      claims.length === 0
        ? { fenced: true, armed: [] }
        : {
            fenced: fencedShards.has(fence.shard),
            armed: armedByShard.get(fence.shard) ?? [],
          },
    );
  }

  async scheduledBefore(
    beforeMs: number,
    cursors: readonly ShardCursor[],
    limitPerShard: number,
  ): Promise<ScheduledEntry[]> {
    if (cursors.length === 0) return [];
    try {
      const result = await this.pool.query(SCHEDULED_BEFORE, [
        isoOfMs(beforeMs),
        cursors.map((c) => c.shard),
        cursors.map((c) => c.after?.runAtMs ?? null),
        cursors.map((c) => c.after?.taskId ?? null),
        limitPerShard,
      ]);
      return result.rows.map((row) => ({
        taskId: row.id,
        tenantId: row.tenant_id,
        runAtMs: roundMs(row.run_at_ms),
        shard: row.shard,
      }));
    } catch (error) {
      throw fromPgError(error, "sweep scheduled tasks");
    }
  }

  async rearmStale(
    staleBeforeMs: number,
    maxWaitMs: number,
    nowMs: number,
    limit: number,
  ): Promise<number> {
    try {
      const result = await this.pool.query(REARM_STALE, [
        isoOfMs(staleBeforeMs),
        nowMs,
        limit,
        maxWaitMs,
      ]);
      return result.rowCount ?? 0;
    } catch (error) {
      throw fromPgError(error, "re-arm stale tasks");
    }
  }
}

interface ArmedRow {
  /** Every row carries it (as text: read once, not once per row): an int[] literal. */
  fenced_shards: string;
  shard: number;
  id: string;
  tenant_id: string;
  type: string;
  payload_json: string;
  priority: ArmedTask["priority"];
  run_at_ms: number;
  attempt: number;
  fencing_token: string;
  timeout_ms: number;
  idempotency_key: string | null;
  workflow_id: string | null;
  grace_ms: number | null;
}

function toArmedTask(row: ArmedRow): ArmedTask {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    type: row.type,
    payloadJson: row.payload_json,
    priority: row.priority,
    runAtMs: roundMs(row.run_at_ms),
    attempt: row.attempt,
    fencingToken: row.fencing_token,
    timeoutMs: row.timeout_ms,
    idempotencyKey: row.idempotency_key,
    workflowId: row.workflow_id,
    graceMs: row.grace_ms ?? 0,
  };
}
