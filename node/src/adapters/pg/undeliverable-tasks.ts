/**
 * The dispatcher's last word on a task whose envelope can never be published
 * (ports/dispatch-store.ts UndeliverableTasks): DEAD with a dead letter,
 * fenced by its arm's token, and its workflow's releases, in one
 * transaction. Workflow rows are locked first, then the tasks (the lock order
 * of migrations/000007).
 */
import type { ArmedTask } from "../../domain/envelope.js";
import type { UndeliverableTasks } from "../../ports/dispatch-store.js";
import type { ExecutionFailure } from "../../ports/execution-store.js";
import type { DueEntry } from "../../ports/hot-tier.js";
import { isoOfMs } from "./epoch-ms.js";
import { fromPgError } from "./errors.js";
import { type PgPool, withTransaction } from "./pool.js";
import { lockWorkflows, releaseLocked, type TerminalRow } from "./release-terminal.js";
import { BURY_UNDELIVERABLE } from "./sql/dispatch.js";

export class PgUndeliverableTasks implements UndeliverableTasks {
  /** `newId`: ids of dead_letters rows (UUIDv7 from the injected clock). */
  constructor(
    private readonly pool: PgPool,
    private readonly newId: () => string,
  ) {}

  async bury(
    tasks: readonly ArmedTask[],
    failure: ExecutionFailure,
    nowMs: number,
  ): Promise<{ buried: string[]; released: DueEntry[] }> {
    if (tasks.length === 0) return { buried: [], released: [] };
    const runAts = tasks.map((t) => t.runAtMs);
    const error = { message: failure.message, code: failure.code ?? null, retryable: false };
    try {
      return await withTransaction(this.pool, async (db) => {
        const nodes = tasks.map((t) => ({
          id: t.id,
          run_at_ms: t.runAtMs,
          workflow_id: t.workflowId,
        }));
        await lockWorkflows(db, nodes);
        const result = await db.query(BURY_UNDELIVERABLE, [
          tasks.map((t) => t.id),
          runAts,
          tasks.map((t) => t.fencingToken),
          tasks.map(() => this.newId()),
          JSON.stringify(error),
          nowMs,
          isoOfMs(nowMs),
          isoOfMs(Math.min(...runAts)),
          isoOfMs(Math.max(...runAts)),
          tasks.map((t) => t.tenantId),
        ]);
        const buried: TerminalRow[] = result.rows;
        const released = await releaseLocked(db, buried, nowMs);
        return { buried: buried.map((r) => r.id), released: [...released.values()].flat() };
      });
    } catch (error) {
      throw fromPgError(error, "bury undeliverable tasks");
    }
  }
}
