import type { ArmedTask } from "../../domain/envelope.js";
import { shardLeaseName } from "../../domain/fair-share.js";
import type {
  ArmResult,
  Claim,
  DispatchStore,
  ScheduledEntry,
  ShardFence,
} from "../../ports/dispatch-store.js";
import { fromPgError } from "./errors.js";
import type { PgPool } from "./pool.js";
import { ARM_TASKS, REARM_STALE, SCHEDULED_BEFORE } from "./sql/arm-tasks.js";

/** The dispatcher roles' view of Postgres: all tenants, as the login role. */
export class PgDispatchStore implements DispatchStore {
  constructor(private readonly pool: PgPool) {}

  async arm(fence: ShardFence, claims: readonly Claim[], nowMs: number): Promise<ArmResult> {
    if (claims.length === 0) return { fenced: true, armed: [] };
    let minMs = Number.POSITIVE_INFINITY;
    let maxMs = Number.NEGATIVE_INFINITY;
    for (const c of claims) {
      if (c.runAtMs < minMs) minMs = c.runAtMs;
      if (c.runAtMs > maxMs) maxMs = c.runAtMs;
    }
    try {
      const result = await this.pool.query(ARM_TASKS, [
        shardLeaseName(fence.shard),
        fence.owner,
        fence.epoch,
        nowMs,
        fence.shard,
        claims.map((c) => c.taskId),
        claims.map((c) => c.runAtMs),
        isoOf(minMs),
        isoOf(maxMs),
      ]);
      const fenced = result.rows[0]?.fenced === 1;
      const armed = result.rows.filter((row) => row.id !== null).map(toArmedTask);
      return { fenced, armed };
    } catch (error) {
      throw fromPgError(error, "arm tasks");
    }
  }

  async scheduledBefore(
    beforeMs: number,
    after: { runAtMs: number; taskId: string } | null,
    limit: number,
  ): Promise<ScheduledEntry[]> {
    try {
      const result = await this.pool.query(SCHEDULED_BEFORE, [
        isoOf(beforeMs),
        after?.runAtMs ?? null,
        after?.taskId ?? null,
        limit,
      ]);
      return result.rows.map((row) => ({
        taskId: row.id,
        tenantId: row.tenant_id,
        runAtMs: Math.round(row.run_at_ms),
      }));
    } catch (error) {
      throw fromPgError(error, "sweep scheduled tasks");
    }
  }

  async rearmStale(staleBeforeMs: number, nowMs: number, limit: number): Promise<number> {
    try {
      const result = await this.pool.query(REARM_STALE, [isoOf(staleBeforeMs), nowMs, limit]);
      return result.rowCount ?? 0;
    } catch (error) {
      throw fromPgError(error, "re-arm stale tasks");
    }
  }
}

/** Exact to the millisecond, which is all a run_at holds (it comes from epoch ms). */
const isoOf = (epochMs: number): string => new Date(epochMs).toISOString();

interface ArmedRow {
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
    runAtMs: Math.round(row.run_at_ms),
    attempt: row.attempt,
    fencingToken: row.fencing_token,
    timeoutMs: row.timeout_ms,
    idempotencyKey: row.idempotency_key,
    workflowId: row.workflow_id,
    graceMs: row.grace_ms ?? 0,
  };
}
