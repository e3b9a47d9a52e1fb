/**
 * The typed client of Chronofence's HTTP API (package entry
 * `chronofence/client`; docs/api.md is the reference of every call):
 *
 *   const client = new ChronofenceClient({ url: "http://127.0.0.1:8080", apiKey: "cfk_..." });
 *   const task = await client.tasks.submit({ type: "echo", payload: { hi: 1 }, delay_ms: 1000 });
 *   for await (const t of client.tasks.list({ status: "DEAD" })) console.log(t.id);
 *   for await (const w of client.workflows.list()) console.log(w.id, w.status);
 *
 * Fields are spelled as the API spells them (snake_case); results are the
 * API's JSON as it answers it. Every failure is a ChronofenceApiError with
 * the API's status and code; 429 and repeatable 503s are retried after
 * Retry-After (transport.ts).
 */
import { type Call, Transport, type TransportOptions } from "./transport.js";
import type {
  AlertReport,
  BatchItem,
  ExecutionCompleted,
  ExecutionCompletion,
  ExecutionExtended,
  ExecutionFailure,
  ExecutionInterruption,
  ExecutionLease,
  ExecutionSettled,
  ExecutionStarted,
  PageOptions,
  Schedule,
  ScheduleCreate,
  ScheduleDeleted,
  SchedulePage,
  SchedulePatch,
  ScheduleUpdated,
  ScheduleView,
  Task,
  TaskFilter,
  TaskPage,
  TaskSubmission,
  Workflow,
  WorkflowPage,
  WorkflowSubmission,
  WorkflowSummary,
} from "./types.js";

export type ClientOptions = TransportOptions;

const segment = (id: string) => encodeURIComponent(id);

export class ChronofenceClient {
  readonly tasks: TaskCalls;
  readonly workflows: WorkflowCalls;
  readonly schedules: ScheduleCalls;
  readonly executions: ExecutionCalls;
  readonly watchdog: WatchdogCalls;

  constructor(options: ClientOptions) {
    const transport = new Transport(options);
    const send = <T>(call: Call) => transport.send<T>(call);
    this.tasks = new TaskCalls(send);
    this.workflows = new WorkflowCalls(send);
    this.schedules = new ScheduleCalls(send);
    this.executions = new ExecutionCalls(send);
    this.watchdog = new WatchdogCalls(send);
  }
}

type Send = <T>(call: Call) => Promise<T>;

/** Every item of a keyset-paginated list: `page(cursor)` until a page has no `next_cursor`. */
async function* everyPage<T>(
  page: (
    cursor: string | undefined,
  ) => Promise<{ items: readonly T[]; next_cursor: string | null }>,
): AsyncGenerator<T> {
  let cursor: string | undefined;
  do {
    const answer = await page(cursor);
    yield* answer.items;
    cursor = answer.next_cursor ?? undefined;
  } while (cursor !== undefined);
}

export class TaskCalls {
  constructor(private readonly send: Send) {}

  /** Submits one task; a replayed idempotency key answers the original task. */
  submit(task: TaskSubmission): Promise<Task> {
    const repeatable = task.idempotency_key !== undefined;
    return this.send({ method: "POST", path: "/v1/tasks", body: task, repeatable });
  }

  /** Submits 1 to 1000 tasks in one commit; one item per task, in order. */
  async submitBatch(tasks: readonly TaskSubmission[]): Promise<BatchItem[]> {
    const repeatable = tasks.every((t) => t.idempotency_key !== undefined);
    const answer = await this.send<{ tasks: BatchItem[] }>({
      method: "POST",
      path: "/v1/tasks/batch",
      body: { tasks },
      repeatable,
    });
    return answer.tasks;
  }

  get(id: string): Promise<Task> {
    return this.send({ method: "GET", path: `/v1/tasks/${segment(id)}`, repeatable: true });
  }

  /** One page; pass its `next_cursor` back for the next. */
  page(filter: TaskFilter = {}, cursor?: string): Promise<TaskPage> {
    const updatedAfter =
      filter.updatedAfter instanceof Date ? filter.updatedAfter.toISOString() : filter.updatedAfter;
    const query = {
      status: filter.status,
      type: filter.type,
      limit: filter.limit,
      order: filter.order,
      updated_after: updatedAfter,
      cursor,
    };
    return this.send({ method: "GET", path: "/v1/tasks", query, repeatable: true });
  }

  /** Every matching task, page after page (keyset cursor), as they are when each page is read. */
  list(filter: TaskFilter = {}): AsyncGenerator<Task> {
    return everyPage(async (cursor) => {
      const { tasks, next_cursor } = await this.page(filter, cursor);
      return { items: tasks, next_cursor };
    });
  }

  /** Cancels a task that has not started (409 invalid_transition otherwise). */
  cancel(id: string): Promise<Task> {
    return this.send({ method: "DELETE", path: `/v1/tasks/${segment(id)}`, repeatable: true });
  }

  /** Runs a DEAD task again, due now. */
  replay(id: string): Promise<Task> {
    const path = `/v1/tasks/${segment(id)}/replay`;
    return this.send({ method: "POST", path, body: {}, repeatable: true });
  }
}

export class WorkflowCalls {
  constructor(private readonly send: Send) {}

  submit(workflow: WorkflowSubmission): Promise<Workflow> {
    return this.send({ method: "POST", path: "/v1/workflows", body: workflow, repeatable: false });
  }

  get(id: string): Promise<Workflow> {
    return this.send({ method: "GET", path: `/v1/workflows/${segment(id)}`, repeatable: true });
  }

  /** One page of the tenant's workflows, newest first, without their nodes (`get` has them). */
  page(options: PageOptions = {}, cursor?: string): Promise<WorkflowPage> {
    const query = { limit: options.limit, cursor };
    return this.send({ method: "GET", path: "/v1/workflows", query, repeatable: true });
  }

  /** Every workflow of the tenant, newest first, page after page (keyset cursor). */
  list(options: PageOptions = {}): AsyncGenerator<WorkflowSummary> {
    return everyPage(async (cursor) => {
      const { workflows, next_cursor } = await this.page(options, cursor);
      return { items: workflows, next_cursor };
    });
  }

  /** Cancels the workflow's pending nodes; running ones finish. */
  cancel(id: string): Promise<Workflow> {
    return this.send({ method: "DELETE", path: `/v1/workflows/${segment(id)}`, repeatable: true });
  }
}

export class ScheduleCalls {
  constructor(private readonly send: Send) {}

  create(schedule: ScheduleCreate): Promise<Schedule> {
    return this.send({ method: "POST", path: "/v1/schedules", body: schedule, repeatable: false });
  }

  /** The schedule and its latest `history` occurrences. */
  get(id: string, options: { history?: number } = {}): Promise<ScheduleView> {
    const path = `/v1/schedules/${segment(id)}`;
    return this.send({
      method: "GET",
      path,
      query: { history: options.history },
      repeatable: true,
    });
  }

  /** One page of the tenant's schedules; pass its `next_cursor` back for the next. */
  page(options: PageOptions = {}, cursor?: string): Promise<SchedulePage> {
    const query = { limit: options.limit, cursor };
    return this.send({ method: "GET", path: "/v1/schedules", query, repeatable: true });
  }

  /** Every schedule of the tenant, page after page. */
  list(options: PageOptions = {}): AsyncGenerator<Schedule> {
    return everyPage(async (cursor) => {
      const { schedules, next_cursor } = await this.page(options, cursor);
      return { items: schedules, next_cursor };
    });
  }

  update(id: string, patch: SchedulePatch): Promise<ScheduleUpdated> {
    const path = `/v1/schedules/${segment(id)}`;
    return this.send({ method: "PATCH", path, body: patch, repeatable: true });
  }

  pause(id: string): Promise<ScheduleUpdated> {
    return this.update(id, { paused: true });
  }

  resume(id: string): Promise<ScheduleUpdated> {
    return this.update(id, { paused: false });
  }

  /** Deletes it and cancels its occurrences not yet started. */
  delete(id: string): Promise<ScheduleDeleted> {
    return this.send({ method: "DELETE", path: `/v1/schedules/${segment(id)}`, repeatable: true });
  }
}

/** The fenced worker protocol (docs/workers.md): every call names the attempt's fencing token. */
export class ExecutionCalls {
  constructor(private readonly send: Send) {}

  private call<T>(taskId: string, action: string, body: unknown): Promise<T> {
    const path = `/v1/executions/${segment(taskId)}/${action}`;
    // Fenced: a repeated call that already committed answers 409 and changes nothing.
    return this.send({ method: "POST", path, body, repeatable: true });
  }

  start(taskId: string, lease: ExecutionLease): Promise<ExecutionStarted> {
    return this.call(taskId, "start", lease);
  }

  heartbeat(taskId: string, lease: ExecutionLease): Promise<ExecutionExtended> {
    return this.call(taskId, "heartbeat", lease);
  }

  complete(taskId: string, completion: ExecutionCompletion): Promise<ExecutionCompleted> {
    return this.call(taskId, "complete", completion);
  }

  fail(taskId: string, failure: ExecutionFailure): Promise<ExecutionSettled> {
    return this.call(taskId, "fail", failure);
  }

  interrupt(taskId: string, interruption: ExecutionInterruption): Promise<ExecutionSettled> {
    return this.call(taskId, "interrupt", interruption);
  }
}

/** What the watchdog reports for the dashboard (docs/dashboard.md). */
export class WatchdogCalls {
  constructor(private readonly send: Send) {}

  /** Stores an alert's transition (firing or resolved) for the key's tenant; repeating it is harmless. */
  reportAlert(report: AlertReport): Promise<{ key: string; state: AlertReport["state"] }> {
    return this.send({
      method: "POST",
      path: "/v1/watchdog/alerts",
      body: report,
      repeatable: true,
    });
  }
}
