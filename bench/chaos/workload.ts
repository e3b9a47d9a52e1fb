/**
 * The chaos workload: an open loop of mixed requests through both APIs, each
 * recorded with its answer (client.ts), and what the checker needs to know
 * about them (history.ts): the task each acknowledgement named and how it is
 * meant to end, cancels and their answers, workflow nodes and their rules,
 * and the cron occurrences that must fire.
 *
 * Every tick (200 ms) it spends rate/5 "task units" on (weights below):
 *  - one-shot tasks due 0–5 s ahead at a random priority; intent succeed,
 *    fail_then_succeed (fails 1–2 attempts, then succeeds), fail_always (2
 *    attempts, then DEAD) or slow (2–6 s); 30 % carry an idempotency key, a
 *    third of those are sent again to a random API (must answer the same id);
 *  - tasks due 4–12 s ahead, cancelled 0.3–3 s after the acknowledgement;
 *  - batches of five; DAG workflows (workflows.ts) of four nodes;
 *  - replays of fail_always tasks (DEAD → SCHEDULED → DEAD again).
 * Requests that got no answer (status 0) are not acknowledgements; keyed
 * ones are retried on the other API until one answers, as a client would.
 *
 * Cron: two `fire_all` schedules with a seconds field (every 2 s; every 3 s
 * with jitter) whose every occurrence between creation and pause must
 * complete, and one `skip`-overlap schedule of slow tasks, checked only for
 * at-most-once. The planner plans 20 s ahead in the chaos topology.
 */

import type { ChaosClient, RequestRecord } from "./client.js";
import type {
  CancelRequest,
  Intent,
  RequiredOccurrence,
  SubmittedTask,
  WorkflowNode,
} from "./history.js";
import { BACKOFF, drawIntent, taskBody } from "./intents.js";
import type { Random } from "./random.js";
import { drawWorkflow } from "./workflows.js";

export interface ScheduleRecord {
  id: string;
  periodMs: number;
  /** fire_all + allow: every occurrence in the window must complete. */
  required: boolean;
  createdAtMs: number;
  /** When the first pause request was sent (no occurrence at or before it is cancelled by it). */
  pausedAtMs: number | null;
}

export interface WorkloadRecord {
  submitted: SubmittedTask[];
  cancels: CancelRequest[];
  workflowNodes: WorkflowNode[];
  schedules: ScheduleRecord[];
  requests: RequestRecord[];
  /** Units the loop could not send because too many requests were in flight. */
  notSent: number;
}

const TICK_MS = 200;
const MAX_IN_FLIGHT = 200;
const UNITS = { task: 62, cancel: 12, batch: 12, workflow: 10, replay: 4 } as const;

export class Workload {
  private readonly submitted: SubmittedTask[] = [];
  private readonly cancels: CancelRequest[] = [];
  private readonly workflowNodes: WorkflowNode[] = [];
  private readonly schedules: ScheduleRecord[] = [];
  private readonly pending = new Set<Promise<unknown>>();
  private readonly deadCandidates: Array<{ id: string; key: string; ackedAtMs: number }> = [];
  private notSent = 0;
  private keys = 0;

  constructor(
    private readonly client: ChaosClient,
    private readonly random: Random,
    private readonly ratePerS: number,
    /** One API key per tenant; each action picks one (tenants spread over Kafka partitions). */
    private readonly apiKeys: readonly string[],
  ) {}

  private get scheduleKey(): string {
    return this.apiKeys[0]!;
  }

  async createSchedules(): Promise<void> {
    const defs = [
      { expression: "*/2 * * * * *", periodMs: 2000, required: true, jitter_ms: 0 },
      { expression: "*/3 * * * * *", periodMs: 3000, required: true, jitter_ms: 500 },
    ];
    for (const [i, def] of defs.entries()) {
      const body = {
        name: `chaos-every-${def.periodMs}`,
        expression: def.expression,
        type: "chaos.run",
        payload: { mode: "succeed" },
        max_attempts: 10,
        backoff: BACKOFF,
        misfire_policy: "fire_all",
        overlap_policy: "allow",
        jitter_ms: def.jitter_ms,
      };
      const created = await createSchedule(
        this.client,
        `schedule.create.${i}`,
        this.scheduleKey,
        body,
      );
      this.schedules.push({ ...def, ...created, pausedAtMs: null });
    }
    const slow = await createSchedule(this.client, "schedule.create.slow", this.scheduleKey, {
      name: "chaos-slow-skip",
      expression: "*/5 * * * * *",
      type: "chaos.run",
      payload: { mode: "slow", ms: 6000 },
      max_attempts: 10,
      timeout_ms: 30_000,
      backoff: BACKOFF,
      misfire_policy: "fire_once",
      overlap_policy: "skip",
    });
    this.schedules.push({ ...slow, periodMs: 5000, required: false, pausedAtMs: null });
  }

  /** Offers the load until `untilMs` (epoch ms), then waits for every answer. */
  async run(untilMs: number): Promise<void> {
    let budget = 0;
    while (Date.now() < untilMs) {
      budget += (this.ratePerS * TICK_MS) / 1000;
      while (budget >= 1) {
        const kind = this.random.weighted(UNITS);
        const cost = kind === "batch" ? 5 : kind === "workflow" ? 4 : 1;
        budget -= cost;
        if (this.client.inFlight >= MAX_IN_FLIGHT) {
          this.notSent += cost;
          continue;
        }
        this.track(this.action(kind));
      }
      await new Promise((resolve) => setTimeout(resolve, TICK_MS));
    }
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  /** Pauses every schedule (retrying until an API answers), recording when each pause was first sent. */
  async pauseSchedules(): Promise<void> {
    for (const s of this.schedules) {
      s.pausedAtMs = Date.now();
      const answer = await this.client.retrying(
        "schedule.pause",
        this.scheduleKey,
        "PATCH",
        `/v1/schedules/${s.id}`,
        {
          paused: true,
        },
        120_000,
      );
      if (answer.status !== 200)
        throw new Error(`pausing schedule ${s.id} answered ${answer.status}`);
    }
  }

  /** Every nominal occurrence of the required schedules strictly inside (creation + 1 s, pause]. */
  requiredOccurrences(): RequiredOccurrence[] {
    const out: RequiredOccurrence[] = [];
    for (const s of this.schedules) {
      if (!s.required || s.pausedAtMs === null) continue;
      const first = Math.ceil((s.createdAtMs + 1000) / s.periodMs) * s.periodMs;
      for (let t = first; t <= s.pausedAtMs - 500; t += s.periodMs)
        out.push({ scheduleId: s.id, scheduledForMs: t });
    }
    return out;
  }

  record(): WorkloadRecord {
    return {
      submitted: this.submitted,
      cancels: this.cancels,
      workflowNodes: this.workflowNodes,
      schedules: this.schedules,
      requests: this.client.requests,
      notSent: this.notSent,
    };
  }

  private track(work: Promise<unknown>): void {
    const p = work.catch(() => undefined).finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  private action(kind: keyof typeof UNITS): Promise<unknown> {
    switch (kind) {
      case "task":
        return this.oneShot();
      case "cancel":
        return this.submitThenCancel();
      case "batch":
        return this.batch();
      case "workflow":
        return this.workflow();
      case "replay":
        return this.replay();
    }
  }

  private draft(intent: Intent, delayMs: number): Record<string, unknown> {
    return {
      type: "chaos.run",
      delay_ms: delayMs,
      priority: this.random.weighted({ critical: 20, standard: 60, bulk: 20 }),
      backoff: BACKOFF,
      ...taskBody(this.random, intent),
    };
  }

  private acknowledge(
    answer: { status: number; body: { id?: string; run_at?: string }; answeredAtMs: number },
    intent: Intent,
    key: string | null,
  ): string | null {
    if ((answer.status !== 201 && answer.status !== 200) || !answer.body?.id) return null;
    this.submitted.push({
      taskId: answer.body.id,
      runAtMs: Date.parse(answer.body.run_at ?? ""),
      ackedAtMs: answer.answeredAtMs,
      intent,
      idempotencyKey: key,
      workflowId: null,
    });
    return answer.body.id;
  }

  private async oneShot(): Promise<void> {
    const intent = drawIntent(this.random);
    const body = this.draft(intent, this.random.int(0, 5000));
    const key = this.random.pick(this.apiKeys);
    if (!this.random.chance(0.3)) {
      const answer = await this.client.send("task.submit", key, "POST", "/v1/tasks", body);
      const id = this.acknowledge(answer, intent, null);
      if (id && intent === "fail_always")
        this.deadCandidates.push({ id, key, ackedAtMs: answer.answeredAtMs });
      return;
    }
    const idempotencyKey = `chaos-${++this.keys}`;
    const keyed = { ...body, idempotency_key: idempotencyKey };
    const first = await this.client.retrying("task.submit.keyed", key, "POST", "/v1/tasks", keyed);
    this.acknowledge(first, intent, idempotencyKey);
    if (this.random.chance(1 / 3)) {
      await sleep(this.random.int(200, 3000));
      const again = await this.client.retrying("task.resubmit", key, "POST", "/v1/tasks", keyed);
      this.acknowledge(again, intent, idempotencyKey);
    }
  }

  private async submitThenCancel(): Promise<void> {
    const body = this.draft("succeed", this.random.int(4000, 12_000));
    const key = this.random.pick(this.apiKeys);
    const answer = await this.client.send("task.submit", key, "POST", "/v1/tasks", body);
    const id = this.acknowledge(answer, "succeed", null);
    if (!id) return;
    await sleep(this.random.int(300, 3000));
    // Every attempt is recorded: one that got no answer may have committed, and then the
    // next answers 409 (already CANCELLED); the checker must know both.
    const deadline = Date.now() + 20_000;
    let api = this.random.int(0, 1);
    for (;;) {
      const cancel = await this.client.send(
        "task.cancel",
        key,
        "DELETE",
        `/v1/tasks/${id}`,
        undefined,
        api,
      );
      this.cancels.push({
        taskId: id,
        sentAtMs: cancel.sentAtMs,
        status: cancel.status,
        taskStatus: cancel.body?.status ?? cancel.body?.error?.details?.status ?? null,
      });
      if (![0, 429, 503].includes(cancel.status) || Date.now() > deadline) return;
      api = 1 - api;
      await sleep(300);
    }
  }

  private async batch(): Promise<void> {
    const intents = Array.from({ length: 5 }, () => drawIntent(this.random));
    const tasks = intents.map((intent) => this.draft(intent, this.random.int(0, 5000)));
    const key = this.random.pick(this.apiKeys);
    const answer = await this.client.send("task.batch", key, "POST", "/v1/tasks/batch", { tasks });
    if (answer.status !== 201 || !Array.isArray(answer.body?.tasks)) return;
    const items = answer.body.tasks as Array<{ id?: string; run_at?: string }>;
    for (const [i, item] of items.entries()) {
      const acked = { status: 201, body: item, answeredAtMs: answer.answeredAtMs };
      this.acknowledge(acked, intents[i]!, null);
    }
  }

  private async workflow(): Promise<void> {
    const drawn = drawWorkflow(this.random);
    const key = this.random.pick(this.apiKeys);
    const answer = await this.client.send(
      "workflow.submit",
      key,
      "POST",
      "/v1/workflows",
      drawn.body,
    );
    if (answer.status !== 201 || !Array.isArray(answer.body?.nodes)) return;
    for (const node of answer.body.nodes as Array<{
      key: string;
      task_id: string;
      run_at: string;
    }>) {
      const spec = drawn.nodes.get(node.key)!;
      this.workflowNodes.push({
        workflowId: answer.body.id,
        taskId: node.task_id,
        key: node.key,
        dependsOn: spec.dependsOn,
        triggerRule: spec.triggerRule,
      });
      this.submitted.push({
        taskId: node.task_id,
        runAtMs: Date.parse(node.run_at),
        ackedAtMs: answer.answeredAtMs,
        intent: spec.intent,
        idempotencyKey: null,
        workflowId: answer.body.id,
      });
    }
  }

  /** Replays a fail_always task acknowledged 5 s ago or more (409 while it is not DEAD yet). */
  private async replay(): Promise<void> {
    const ready = this.deadCandidates.findIndex((c) => Date.now() - c.ackedAtMs > 5000);
    if (ready < 0) return;
    const [candidate] = this.deadCandidates.splice(ready, 1);
    await this.client.send(
      "task.replay",
      candidate!.key,
      "POST",
      `/v1/tasks/${candidate!.id}/replay`,
      {},
    );
  }
}

/**
 * Creates a schedule, retrying on other APIs while none answers. A create
 * that committed without its answer reaching us makes the retry answer 409
 * `name_taken` (names are unique in a tenant): then the schedule of that name
 * is the one created, found in the list. Its creation instant is taken as the
 * 409's (later than the truth), so no occurrence before it is required.
 */
export async function createSchedule(
  client: Pick<ChaosClient, "retrying">,
  op: string,
  apiKey: string,
  body: { name: string } & Record<string, unknown>,
): Promise<{ id: string; createdAtMs: number }> {
  const answer = await client.retrying(op, apiKey, "POST", "/v1/schedules", body, 120_000);
  if (answer.status === 201) return { id: answer.body.id, createdAtMs: answer.answeredAtMs };
  if (answer.status === 409) {
    const list = await client.retrying(
      `${op}.find`,
      apiKey,
      "GET",
      "/v1/schedules?limit=1000",
      undefined,
      120_000,
    );
    const found = (list.body?.schedules as Array<{ id: string; name: string }> | undefined)?.find(
      (s) => s.name === body.name,
    );
    if (list.status === 200 && found) return { id: found.id, createdAtMs: answer.answeredAtMs };
  }
  throw new Error(`creating schedule ${body.name} answered ${answer.status}`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
