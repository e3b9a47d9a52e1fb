/**
 * Terminal states never move back (docs/architecture.md, invariant 5): every
 * path that changes a task's status, driven through the production stores
 * and statements (adapters/pg) against a task in every terminal state —
 * COMPLETED, DEAD, CANCELLED, SKIPPED — is refused and changes nothing: the
 * row, xmin included, is what it was. The one deliberate exception is replay
 * (DEAD → SCHEDULED, section 3), checked here to do exactly that.
 *
 * The rows are as tempting as a stale actor finds them
 * (support/terminal-subjects.ts): the token a late worker holds, a lease
 * long expired, armed long ago under an older epoch of a shard whose lease
 * the test holds (so an arm is refused by the status, not by the fence).
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isoOfMs } from "../../src/adapters/pg/epoch-ms.js";
import { CANCEL_FAILED, SETTLE_FAILURES } from "../../src/adapters/pg/sql/execution.js";
import { RELEASE_TASKS } from "../../src/adapters/pg/sql/plan.js";
import { CANCEL_TASKS } from "../../src/adapters/pg/sql/schedules.js";
import { PgUndeliverableTasks } from "../../src/adapters/pg/undeliverable-tasks.js";
import { CANCELLABLE_STATUSES, TERMINAL_STATUSES } from "../../src/domain/task.js";
import {
  armAndStart,
  LEASE_OWNER,
  rowOf,
  type Stores,
  type Subject,
  startStores,
  TERMINAL_STATES,
  terminalNode,
  terminalTask,
} from "./support/terminal-subjects.js";

let s: Stores;

beforeAll(async () => {
  s = await startStores();
});

afterAll(async () => {
  await s?.stop();
});

const DAY_MS = 86_400_000;
const failure = { message: "late", code: "late", retryable: true };
const errorJson = JSON.stringify({ message: "late", retryable: true });

interface Verdict {
  refused: boolean;
  /** What the call answered, shown when a verdict is wrong. */
  answer: unknown;
}

interface Path {
  name: string;
  /** A standalone task, or a workflow node (with a parent that is still pending). */
  on: "task" | "node";
  run: (x: Subject) => Promise<Verdict>;
}

const stale = (answer: { kind: string }): Verdict => ({ refused: answer.kind === "stale", answer });
const noRows = (result: { rowCount: number | null }): Verdict => ({
  refused: result.rowCount === 0,
  answer: { rowCount: result.rowCount },
});

const PATHS: Path[] = [
  {
    name: "cancel: DELETE /v1/tasks/{id} (CANCEL_TASK)",
    on: "task",
    run: async (x) => {
      const answer = await s.tasks.cancel(x.tenantId, x.id, s.apiKeyId, Date.now());
      return { refused: answer.kind === "not_cancellable", answer: answer.kind };
    },
  },
  {
    name: "cancel: DELETE /v1/tasks/{id} of a workflow node (CANCEL_TASK, then the releaser)",
    on: "node",
    run: async (x) => {
      const answer = await s.tasks.cancel(x.tenantId, x.id, s.apiKeyId, Date.now());
      return { refused: answer.kind === "not_cancellable", answer: answer.kind };
    },
  },
  {
    name: "cancel: a schedule's pause, change or delete (CANCEL_TASKS)",
    on: "task",
    run: async (x) =>
      noRows(
        await s.pool.query(CANCEL_TASKS, [
          [x.id],
          [isoOfMs(x.runAtMs)],
          Date.now(),
          CANCELLABLE_STATUSES,
          x.tenantId,
        ]),
      ),
  },
  {
    name: "cancel: DELETE /v1/workflows/{id} (cf_cancel_workflow)",
    on: "node",
    run: async (x) => {
      const answer = await s.workflows.cancel(x.tenantId, x.workflowId!, s.apiKeyId, Date.now());
      const ids = answer.kind === "cancelled" ? answer.cancelledTaskIds : [];
      return { refused: !ids.includes(x.id), answer };
    },
  },
  {
    name: "arm: a dispatcher holding a newer epoch of the shard (ARM_TASKS)",
    on: "task",
    run: async (x) => {
      const fence = { shard: x.shard, owner: LEASE_OWNER, epoch: s.epochOf.get(x.shard)! };
      const claims = [{ taskId: x.id, runAtMs: x.runAtMs }];
      const [answer] = await s.dispatch.arm([{ fence, claims }], Date.now());
      // Fenced: the lease held, so a refusal is the status test's.
      return { refused: answer!.fenced && answer!.armed.length === 0, answer };
    },
  },
  ...(["task", "node"] as const).map(
    (on): Path => ({
      name: `bury: an envelope the broker can never accept, to DEAD (BURY_UNDELIVERABLE)${on === "node" ? ", of a workflow node" : ""}`,
      on,
      // With the token the row holds, as the dispatcher that armed it would.
      run: async (x) => {
        const armed = {
          id: x.id,
          tenantId: x.tenantId,
          type: "t",
          payloadJson: "{}",
          priority: "standard" as const,
          runAtMs: x.runAtMs,
          attempt: 1,
          fencingToken: x.token,
          timeoutMs: 1000,
          idempotencyKey: null,
          workflowId: x.workflowId,
          graceMs: 0,
        };
        const answer = await new PgUndeliverableTasks(s.pool, randomUUID).bury(
          [armed],
          { message: "too large", code: "undeliverable", retryable: false },
          Date.now(),
        );
        return { refused: !answer.buried.includes(x.id), answer };
      },
    }),
  ),
  {
    name: "re-arm: the reconciler's stale ARMED sweep (REARM_STALE)",
    on: "task",
    // A sweep over every row, which answers a count: the subject's unchanged row is the verdict.
    run: async () => {
      const count = await s.dispatch.rearmStale(Date.now() + 30 * DAY_MS, 0, Date.now(), 1000);
      return { refused: true, answer: count };
    },
  },
  {
    name: "lease expiry: the reconciler's expired RUNNING sweep (LOCK_EXPIRED, SETTLE_FAILURES)",
    on: "task",
    run: async (x) => {
      const expired = await s.executions.expireLeases(Date.now() + 30 * DAY_MS, 1000);
      return { refused: !expired.some((e) => e.taskId === x.id), answer: expired };
    },
  },
  {
    name: "settle: a decided failure, to DEAD (SETTLE_FAILURES)",
    on: "task",
    run: async (x) =>
      noRows(
        await s.pool.query(SETTLE_FAILURES, [
          [x.id],
          [x.runAtMs],
          [null],
          [errorJson],
          Date.now(),
          [1],
          [x.tenantId],
        ]),
      ),
  },
  {
    name: "settle: a decided failure, to a retry (SETTLE_FAILURES)",
    on: "task",
    run: async (x) =>
      noRows(
        await s.pool.query(SETTLE_FAILURES, [
          [x.id],
          [x.runAtMs],
          [x.runAtMs + 1000],
          [errorJson],
          Date.now(),
          [1],
          [x.tenantId],
        ]),
      ),
  },
  {
    name: "settle: a retry of a stopped workflow's node, to CANCELLED (CANCEL_FAILED)",
    on: "task",
    run: async (x) =>
      noRows(
        await s.pool.query(CANCEL_FAILED, [
          [x.id],
          [x.runAtMs],
          [errorJson],
          Date.now(),
          [x.tenantId],
        ]),
      ),
  },
  {
    name: "release: the DAG releaser, as the parent completes (cf_release_dependents)",
    on: "node",
    run: async (x) => {
      const parent = await armAndStart(s, x.parentId!);
      const answer = await s.executions.complete(parent, "null", Date.now());
      const released = answer.kind === "completed" ? (answer.released ?? []) : [];
      const refused = answer.kind === "completed" && !released.some((e) => e.taskId === x.id);
      return { refused, answer };
    },
  },
  {
    name: "release: a buffered occurrence (RELEASE_TASKS)",
    on: "task",
    run: async (x) =>
      noRows(
        await s.pool.query(RELEASE_TASKS, [[x.id], [isoOfMs(x.runAtMs)], Date.now(), [x.tenantId]]),
      ),
  },
  {
    name: "start (startTask)",
    on: "task",
    run: async (x) => stale(await s.executions.start(x.ref, "late-worker", 30_000, Date.now())),
  },
  {
    name: "start, coalesced (START_MANY)",
    on: "task",
    run: async (x) => stale(await s.coalesced.start(x.ref, "late-worker", 30_000, Date.now())),
  },
  {
    name: "heartbeat (heartbeatTask)",
    on: "task",
    run: async (x) => stale(await s.executions.heartbeat(x.ref, "late-worker", 30_000, Date.now())),
  },
  {
    name: "complete (completeTask)",
    on: "task",
    run: async (x) => stale(await s.executions.complete(x.ref, '{"late":true}', Date.now())),
  },
  {
    name: "complete, coalesced (COMPLETE_MANY)",
    on: "task",
    run: async (x) => stale(await s.coalesced.complete(x.ref, '{"late":true}', Date.now())),
  },
  {
    name: "fail (lockRunningTask, SETTLE_FAILURES)",
    on: "task",
    run: async (x) => stale(await s.executions.fail(x.ref, failure, Date.now())),
  },
  {
    name: "interrupt (lockRunningTask, SETTLE_FAILURES)",
    on: "task",
    run: async (x) => stale(await s.executions.interrupt(x.ref, failure, Date.now())),
  },
  {
    name: "replay: POST /v1/tasks/{id}/replay (REPLAY_TASK)",
    on: "task",
    run: async (x) => {
      const answer = await s.executions.replay(x.tenantId, x.id, s.apiKeyId, Date.now());
      return { refused: answer.kind !== "replayed", answer };
    },
  },
  {
    name: "replay of a workflow node (REPLAY_TASK)",
    on: "node",
    run: async (x) => {
      const answer = await s.executions.replay(x.tenantId, x.id, s.apiKeyId, Date.now());
      return { refused: answer.kind !== "replayed", answer };
    },
  },
];

/** Replay of a standalone DEAD task: the one way back. */
const isTheException = (path: Path, state: string) =>
  path.name.startsWith("replay:") && state === "DEAD";

const cells = PATHS.flatMap((path) => TERMINAL_STATES.map((state) => ({ path, state })));

describe("terminal states never move back", () => {
  it.each(cells.filter((c) => !isTheException(c.path, c.state)))(
    "$path.name × $state: refused, the row unchanged",
    async ({ path, state }) => {
      const x = path.on === "task" ? await terminalTask(s, state) : await terminalNode(s, state);
      const before = await rowOf(s, x.id);
      const verdict = await path.run(x);
      expect(verdict, JSON.stringify(verdict.answer)).toMatchObject({ refused: true });
      expect(await rowOf(s, x.id)).toEqual(before);
    },
  );

  it("replay × DEAD: the one deliberate exception, back to SCHEDULED with a new token", async () => {
    const x = await terminalTask(s, "DEAD");
    const nowMs = Date.now();
    const answer = await s.executions.replay(x.tenantId, x.id, s.apiKeyId, nowMs);
    expect(answer).toEqual({
      kind: "replayed",
      tenantId: x.tenantId,
      taskId: x.id,
      runAtMs: nowMs,
    });
    const after = (await rowOf(s, x.id)).row as Record<string, unknown>;
    expect(after).toMatchObject({ status: "SCHEDULED", attempt: 1, dead_at: null });
    expect(BigInt(after.fencing_token as number)).toBeGreaterThan(BigInt(x.token));
  });

  it("covers every terminal state the domain declares", () => {
    expect(new Set(TERMINAL_STATES)).toEqual(TERMINAL_STATUSES);
    expect(cells).toHaveLength(PATHS.length * TERMINAL_STATUSES.size);
  });
});
