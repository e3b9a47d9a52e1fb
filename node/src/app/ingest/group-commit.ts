/**
 * Group commit: concurrent requests share one multi-row INSERT and one commit.
 *
 * Requests queue here; a flush takes everything queued (up to maxBatchRows,
 * never splitting one request's rows, so a batch request stays one commit)
 * and hands it to the store as one call. At most maxInFlight flushes run at
 * once; while they run, new requests queue and form the next group. So under
 * light load a request commits alone with no added wait, and under heavy load
 * groups grow until commits keep up — no timer to tune.
 *
 * A request's promise settles only after its group's commit has returned:
 * resolved means durable.
 */
import { ChronofenceError, ErrorCode, isChronofenceError } from "../../domain/errors.js";
import type { Clock } from "../../ports/clock.js";
import type { InsertOutcome, InsertRequest, TaskStore } from "../../ports/task-store.js";

export interface GroupCommitOptions {
  maxBatchRows: number;
  maxInFlight: number;
  /** Shed load beyond this many queued rows (503) rather than queue without bound. */
  maxQueuedRows: number;
}

export interface CommittedGroup {
  rows: readonly InsertRequest[];
  outcomes: readonly InsertOutcome[];
}

interface Waiter {
  rows: readonly InsertRequest[];
  resolve: (outcomes: InsertOutcome[]) => void;
  reject: (error: unknown) => void;
}

export class GroupCommitter {
  private queue: Waiter[] = [];
  private queuedRows = 0;
  private inFlight = 0;
  private scheduled = false;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly store: TaskStore,
    private readonly clock: Clock,
    private readonly options: GroupCommitOptions,
    private readonly onCommitted: (group: CommittedGroup, durationMs: number, ok: boolean) => void,
  ) {}

  submit(rows: readonly InsertRequest[]): Promise<InsertOutcome[]> {
    if (this.queuedRows + rows.length > this.options.maxQueuedRows && this.queue.length > 0) {
      const error = new ChronofenceError(ErrorCode.Unavailable, "ingest queue is full", {
        details: { queued_rows: this.queuedRows },
      });
      return Promise.reject(error);
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ rows, resolve, reject });
      this.queuedRows += rows.length;
      this.schedule();
    });
  }

  /** Resolves when nothing is queued or committing (for graceful shutdown). */
  whenIdle(): Promise<void> {
    if (this.queue.length === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.maxInFlight) return;
    this.scheduled = true;
    // setImmediate, not a microtask: requests parsed in the same I/O poll join one group.
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.queue.length > 0 && this.inFlight < this.options.maxInFlight) {
      const group = this.takeGroup();
      this.inFlight++;
      void this.commit(group).finally(() => {
        this.inFlight--;
        if (this.queue.length > 0) this.schedule();
        else if (this.inFlight === 0) this.notifyIdle();
      });
    }
  }

  private takeGroup(): Waiter[] {
    const group: Waiter[] = [];
    let rows = 0;
    while (this.queue.length > 0) {
      const next = this.queue[0]!;
      if (group.length > 0 && rows + next.rows.length > this.options.maxBatchRows) break;
      group.push(this.queue.shift()!);
      rows += next.rows.length;
    }
    this.queuedRows -= rows;
    return group;
  }

  private async commit(group: Waiter[]): Promise<void> {
    const rows = group.flatMap((waiter) => waiter.rows);
    const startMs = this.clock.monotonicMs();
    let outcomes: InsertOutcome[];
    try {
      outcomes = await this.store.insertMany(rows, this.clock.nowMs());
    } catch (error) {
      this.report({ rows, outcomes: [] }, startMs, false);
      if (group.length > 1 && !isTransient(error)) {
        // One bad row must not fail its neighbours: commit each request alone.
        await Promise.all(group.map((waiter) => this.commit([waiter])));
        return;
      }
      for (const waiter of group) waiter.reject(error);
      return;
    }
    this.report({ rows, outcomes }, startMs, true);
    let offset = 0;
    for (const waiter of group) {
      waiter.resolve(outcomes.slice(offset, offset + waiter.rows.length));
      offset += waiter.rows.length;
    }
  }

  private report(group: CommittedGroup, startMs: number, ok: boolean): void {
    try {
      this.onCommitted(group, this.clock.monotonicMs() - startMs, ok);
    } catch {
      // Observers must not turn a durable commit into a failed request.
    }
  }

  private notifyIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

const isTransient = (error: unknown): boolean =>
  isChronofenceError(error) && error.code === ErrorCode.Unavailable;
