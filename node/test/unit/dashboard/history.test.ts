/** A task's timeline and attempts (task-history.ts), and the cluster view's token (operator-token.ts). */
import { describe, expect, it } from "vitest";
import { OperatorToken } from "../../../src/app/dashboard/operator-token.js";
import { localIso } from "../../../src/app/dashboard/schedule-insight.js";
import { historyOf } from "../../../src/app/dashboard/task-history.js";
import type { Task } from "../../../src/domain/task.js";
import type { TaskHistoryRecord } from "../../../src/ports/dashboard-store.js";

const task = (over: Partial<Task>): Task => ({
  id: "01a00000-0000-7000-8000-000000000001",
  tenantId: "t",
  type: "x",
  payload: null,
  priority: "standard",
  status: "COMPLETED",
  runAtMs: 10_000,
  attempt: 1,
  maxAttempts: 3,
  timeoutMs: 1000,
  backoff: { strategy: "fixed", baseMs: 1, maxMs: 1 },
  idempotencyKey: null,
  fencingToken: "7",
  result: { ok: true },
  lastError: null,
  workflowId: null,
  scheduleId: null,
  createdAtMs: 1000,
  updatedAtMs: 10_500,
  cancelledAtMs: null,
  finishedAtMs: 10_500,
  ...over,
});

const record = (over: Partial<TaskHistoryRecord>): TaskHistoryRecord => ({
  task: task({}),
  fencingToken: "7",
  leaseOwner: "w",
  leaseExpiresAtMs: null,
  dispatchShard: 3,
  dispatchEpoch: 2,
  armedAtMs: 8000,
  dispatchedAtMs: 10_002,
  startedAtMs: 10_010,
  completedAtMs: 10_500,
  failedAtMs: null,
  deadAtMs: null,
  skippedAtMs: null,
  attempts: [],
  ...over,
});

describe("task history", () => {
  it("gives each stage its instant and lateness against run_at, and the row's attempt", () => {
    const h = historyOf(record({}));
    expect(h.stages.map((s) => [s.stage, s.latenessMs])).toEqual([
      ["created", null],
      ["armed", -2000],
      ["published", 2],
      ["started", 10],
      ["finished", 500],
    ]);
    expect(h.stages[4]!.outcome).toBe("COMPLETED");
    expect(h.attempts).toEqual([
      expect.objectContaining({
        attempt: 1,
        outcome: "completed",
        fencingToken: "7",
        result: { ok: true },
      }),
    ]);
  });

  it("leaves out a stage of an earlier attempt (before the latest failure)", () => {
    const failed = {
      attempt: 1,
      fencingToken: "5",
      workerId: "w",
      dispatchedAtMs: 9000,
      startedAtMs: 9010,
      endedAtMs: 9100,
      outcome: "retried" as const,
      error: { message: "boom" },
    };
    const h = historyOf(
      record({
        task: task({ status: "SCHEDULED", runAtMs: 20_000, attempt: 1 }),
        armedAtMs: 8000,
        dispatchedAtMs: 9000,
        startedAtMs: 9010,
        completedAtMs: null,
        failedAtMs: 9100,
        attempts: [failed],
      }),
    );
    expect(h.stages.slice(1).map((s) => s.atMs)).toEqual([null, null, null, null]);
    expect(h.attempts).toEqual([failed]);
  });

  it("shows a DEAD task's last attempt, whose own failure is the latest", () => {
    const entry = (attempt: number, startedAtMs: number, endedAtMs: number) => ({
      attempt,
      fencingToken: String(attempt),
      workerId: "w",
      dispatchedAtMs: startedAtMs - 5,
      startedAtMs,
      endedAtMs,
      outcome: attempt === 2 ? ("dead" as const) : ("retried" as const),
      error: { message: "boom" },
    });
    const h = historyOf(
      record({
        task: task({ status: "DEAD", runAtMs: 20_000, attempt: 2 }),
        armedAtMs: 19_000,
        dispatchedAtMs: 20_005,
        startedAtMs: 20_010,
        completedAtMs: null,
        failedAtMs: 20_100,
        deadAtMs: 20_100,
        attempts: [entry(1, 9010, 9100), entry(2, 20_010, 20_100)],
      }),
    );
    expect(h.stages.map((s) => s.atMs)).toEqual([1000, 19_000, 20_005, 20_010, 20_100]);
    expect(h.stages[4]!.outcome).toBe("DEAD");
  });
});

describe("operator token", () => {
  it("accepts exactly the configured token, and nothing when none is configured", () => {
    const token = new OperatorToken("a-long-operator-token");
    expect(() => token.check("Bearer a-long-operator-token")).not.toThrow();
    expect(() => token.check("bearer   a-long-operator-token")).not.toThrow();
    for (const bad of [
      "",
      "Bearer",
      "Bearer a-long-operator-toke",
      "Bearer a-long-operator-tokenX",
      "a-long-operator-token",
    ])
      expect(() => token.check(bad)).toThrow(/operator token/);
    const off = new OperatorToken(undefined);
    expect(off.configured).toBe(false);
    expect(() => off.check("Bearer ")).toThrow(/CF_ADMIN_TOKEN/);
  });
});

describe("local time of a fire instant", () => {
  it("writes the zone's offset, across a daylight-saving change", () => {
    expect(localIso("Europe/Berlin", Date.parse("2030-03-30T01:30:00Z"))).toBe(
      "2030-03-30T02:30:00+01:00",
    );
    expect(localIso("Europe/Berlin", Date.parse("2030-03-31T01:00:00Z"))).toBe(
      "2030-03-31T03:00:00+02:00",
    );
    expect(localIso("America/New_York", Date.parse("2030-01-07T14:00:00Z"))).toBe(
      "2030-01-07T09:00:00-05:00",
    );
    expect(localIso("Asia/Kolkata", Date.parse("2030-01-07T00:00:00Z"))).toBe(
      "2030-01-07T05:30:00+05:30",
    );
  });
});
