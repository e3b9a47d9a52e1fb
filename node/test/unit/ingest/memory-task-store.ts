/**
 * A plain in-memory TaskStore: the reference for the port's contract (one
 * commit per insertMany, idempotency per tenant and key, tenant scoping) and
 * the fake for use-case tests that need no Postgres.
 */
import { CANCELLABLE_STATUSES, type Task, taskOfDraft } from "../../../src/domain/task.js";
import type {
  CancelOutcome,
  InsertOutcome,
  InsertRequest,
  TaskFilter,
  TaskStore,
} from "../../../src/ports/task-store.js";

const hex = (bytes: Uint8Array | null) => (bytes ? Buffer.from(bytes).toString("hex") : "");

export class MemoryTaskStore implements TaskStore {
  readonly tasks = new Map<string, Task>();
  private readonly keys = new Map<string, { taskId: string; hash: string }>();
  commits = 0;

  async insertMany(rows: readonly InsertRequest[]): Promise<InsertOutcome[]> {
    this.commits++;
    return rows.map(({ draft, requestHash }) => {
      if (draft.idempotencyKey !== null) {
        const key = `${draft.tenantId}\u0000${draft.idempotencyKey}`;
        const taken = this.keys.get(key);
        if (taken) {
          return {
            kind: taken.hash === hex(requestHash) ? "replayed" : "conflict",
            taskId: taken.taskId,
          };
        }
        this.keys.set(key, { taskId: draft.id, hash: hex(requestHash) });
      }
      this.tasks.set(draft.id, taskOfDraft(draft, JSON.parse(draft.payloadJson)));
      return { kind: "created" };
    });
  }

  async get(tenantId: string, taskId: string): Promise<Task | null> {
    const task = this.tasks.get(taskId);
    return task && task.tenantId === tenantId ? task : null;
  }

  async list(tenantId: string, filter: TaskFilter): Promise<Task[]> {
    const byId = [...this.tasks.values()]
      .filter((t) => t.tenantId === tenantId)
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    const { changes } = filter;
    const matching = (changes ? byId.slice(-changes.windowTasks) : byId)
      .filter((t) => !filter.status || t.status === filter.status)
      .filter((t) => !filter.type || t.type === filter.type);
    if (!changes) {
      return matching
        .filter((t) => !filter.afterId || t.id > filter.afterId)
        .slice(0, filter.limit);
    }
    const { updatedAtMs, id } = changes.after;
    return matching
      .filter((t) => t.updatedAtMs > updatedAtMs || (t.updatedAtMs === updatedAtMs && t.id > id))
      .sort((a, b) => a.updatedAtMs - b.updatedAtMs || (a.id < b.id ? -1 : 1))
      .slice(0, filter.limit);
  }

  async cancel(
    tenantId: string,
    taskId: string,
    _apiKeyId: string,
    nowMs: number,
  ): Promise<CancelOutcome> {
    const task = await this.get(tenantId, taskId);
    if (!task) return { kind: "not_found" };
    if (!CANCELLABLE_STATUSES.includes(task.status)) return { kind: "not_cancellable", task };
    const cancelled: Task = {
      ...task,
      status: "CANCELLED",
      cancelledAtMs: nowMs,
      updatedAtMs: nowMs,
    };
    this.tasks.set(taskId, cancelled);
    return { kind: "cancelled", task: cancelled };
  }
}
