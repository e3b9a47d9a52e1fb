/**
 * The soak's steady mixed load, through every API in turn: one-shot tasks
 * at `ratePerS` in batches every 200 ms (mostly quick successes, some that
 * fail once and retry, a few that die: dead letters, a few slow ones), one
 * four-node DAG workflow per second (chaos/workflows.ts), and cron schedules
 * with seconds fields, created at the start. Unlike the chaos workload it
 * keeps no history — only counts — since nothing is checked per task: an
 * hour at 500 tasks/s would hold millions of records.
 */
import { BACKOFF, taskBody } from "../chaos/intents.js";
import type { Random } from "../chaos/random.js";
import { drawWorkflow } from "../chaos/workflows.js";

const TICK_MS = 200;
/** Requests in flight beyond which a tick's work is not sent (counted): the load stays open-loop but bounded. */
const MAX_IN_FLIGHT = 64;
const MIX = { succeed: 90, fail_then_succeed: 6, fail_always: 2, slow: 2 } as const;

export interface LoadCounts {
  tasksAccepted: number;
  tasksRefused: number;
  tasksNotSent: number;
  workflowsAccepted: number;
  requestsUnanswered: number;
}

export class SoakLoad {
  readonly counts: LoadCounts = {
    tasksAccepted: 0,
    tasksRefused: 0,
    tasksNotSent: 0,
    workflowsAccepted: 0,
    requestsUnanswered: 0,
  };
  private inFlight = 0;
  private nextApi = 0;
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly apiUrls: readonly string[],
    private readonly apiKeys: readonly string[],
    private readonly random: Random,
    private readonly ratePerS: number,
  ) {}

  async createSchedules(): Promise<void> {
    const schedules = [
      { name: "soak-every-second", expression: "* * * * * *", payload: { mode: "succeed" } },
      { name: "soak-every-5s", expression: "*/5 * * * * *", payload: { mode: "succeed", ms: 50 } },
      {
        name: "soak-slow-skip",
        expression: "*/10 * * * * *",
        payload: { mode: "slow", ms: 3000 },
        overlap_policy: "skip",
      },
    ];
    for (const [i, s] of schedules.entries()) {
      const answer = await this.post("/v1/schedules", this.apiKeys[i % this.apiKeys.length]!, {
        type: "chaos.run",
        max_attempts: 5,
        backoff: BACKOFF,
        misfire_policy: "fire_once",
        ...s,
      });
      if (answer.status !== 201)
        throw new Error(`creating schedule ${s.name} answered ${answer.status}`);
    }
  }

  /** Offers the load until `untilMs`, then waits for the answers in flight. */
  async run(untilMs: number): Promise<void> {
    let budget = 0;
    let lastMs = Date.now();
    let nextWorkflowMs = lastMs;
    while (Date.now() < untilMs) {
      // By the time that passed, not by ticks: on a loaded machine a 200 ms timer fires late.
      const nowMs = Date.now();
      budget += (this.ratePerS * (nowMs - lastMs)) / 1000;
      lastMs = nowMs;
      const size = Math.min(1000, Math.floor(budget));
      budget -= size;
      if (size > 0) this.track(this.batch(size));
      if (Date.now() >= nextWorkflowMs) {
        nextWorkflowMs += 1000;
        this.track(this.workflow());
      }
      await new Promise((resolve) => setTimeout(resolve, TICK_MS));
    }
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  private track(work: Promise<void>): void {
    const p = work.finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  private async batch(size: number): Promise<void> {
    if (this.inFlight >= MAX_IN_FLIGHT) {
      this.counts.tasksNotSent += size;
      return;
    }
    const tasks = Array.from({ length: size }, () => ({
      type: "chaos.run",
      delay_ms: this.random.int(0, 5000),
      priority: this.random.weighted({ critical: 10, standard: 70, bulk: 20 }),
      backoff: BACKOFF,
      ...taskBody(this.random, this.random.weighted(MIX)),
    }));
    const answer = await this.post("/v1/tasks/batch", this.random.pick(this.apiKeys), { tasks });
    if (answer.status === 201) this.counts.tasksAccepted += size;
    else this.counts.tasksRefused += size;
  }

  private async workflow(): Promise<void> {
    if (this.inFlight >= MAX_IN_FLIGHT) return;
    const { body } = drawWorkflow(this.random);
    const answer = await this.post("/v1/workflows", this.random.pick(this.apiKeys), body);
    if (answer.status === 201) this.counts.workflowsAccepted++;
  }

  private async post(path: string, apiKey: string, body: unknown): Promise<{ status: number }> {
    const url = this.apiUrls[this.nextApi++ % this.apiUrls.length];
    this.inFlight++;
    try {
      const response = await fetch(`${url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
      await response.arrayBuffer();
      return { status: response.status };
    } catch {
      this.counts.requestsUnanswered++;
      return { status: 0 };
    } finally {
      this.inFlight--;
    }
  }
}
