/** The chaos checker on hand-made histories: a clean one passes every rule; each broken one fails exactly its rule. */
import { describe, expect, it } from "vitest";
import { check } from "../../../../bench/chaos/checker.js";
import type { History, TaskRow } from "../../../../bench/chaos/history.js";

const row = (id: string, over: Partial<TaskRow> = {}): TaskRow => ({
  id,
  status: "COMPLETED",
  runAtMs: 1000,
  fencingToken: "7",
  scheduleId: null,
  scheduledForMs: null,
  idempotencyKey: null,
  armedAtMs: 990,
  startedAtMs: 1001,
  finishedAtMs: 1010,
  ...over,
});

/** One task that ran once at its time, a DAG a → b, a cron occurrence, a cancelled task, a replay. */
function clean(): History {
  const tasks = [
    row("t1"),
    row("a", { fencingToken: "8", finishedAtMs: 1020 }),
    row("b", { fencingToken: "9", startedAtMs: 1030, finishedAtMs: 1040 }),
    row("c1", { fencingToken: "10", scheduleId: "s", scheduledForMs: 2000, runAtMs: 2000 }),
    row("x", { status: "CANCELLED", fencingToken: null, startedAtMs: null }),
  ];
  return {
    submitted: [
      {
        taskId: "t1",
        runAtMs: 1000,
        ackedAtMs: 500,
        intent: "succeed",
        idempotencyKey: "k1",
        workflowId: null,
      },
      {
        taskId: "t1",
        runAtMs: 1000,
        ackedAtMs: 600,
        intent: "succeed",
        idempotencyKey: "k1",
        workflowId: null,
      },
      {
        taskId: "a",
        runAtMs: 1000,
        ackedAtMs: 500,
        intent: "succeed",
        idempotencyKey: null,
        workflowId: "w",
      },
      {
        taskId: "b",
        runAtMs: 1000,
        ackedAtMs: 500,
        intent: "succeed",
        idempotencyKey: null,
        workflowId: "w",
      },
      {
        taskId: "x",
        runAtMs: 5000,
        ackedAtMs: 500,
        intent: "succeed",
        idempotencyKey: null,
        workflowId: null,
      },
    ],
    requiredOccurrences: [{ scheduleId: "s", scheduledForMs: 2000 }],
    cancels: [{ taskId: "x", sentAtMs: 700, status: 200, taskStatus: "CANCELLED" }],
    executions: [
      // A zombie's run under an older token is allowed (at least once); the commit is the newer token's.
      {
        taskId: "t1",
        fencingToken: "6",
        attempt: 1,
        node: "w1",
        startedAtMs: 1001,
        finishedAtMs: null,
      },
      {
        taskId: "t1",
        fencingToken: "7",
        attempt: 2,
        node: "w2",
        startedAtMs: 1005,
        finishedAtMs: 1010,
      },
      {
        taskId: "a",
        fencingToken: "8",
        attempt: 1,
        node: "w1",
        startedAtMs: 1002,
        finishedAtMs: 1020,
      },
      {
        taskId: "b",
        fencingToken: "9",
        attempt: 1,
        node: "w2",
        startedAtMs: 1030,
        finishedAtMs: 1040,
      },
      {
        taskId: "c1",
        fencingToken: "10",
        attempt: 1,
        node: "w3",
        startedAtMs: 2001,
        finishedAtMs: 2002,
      },
    ],
    workflowNodes: [
      { workflowId: "w", taskId: "a", key: "a", dependsOn: [], triggerRule: "all_success" },
      { workflowId: "w", taskId: "b", key: "b", dependsOn: ["a"], triggerRule: "all_success" },
    ],
    transitions: [
      { taskId: "t1", from: "RUNNING", to: "COMPLETED", atMs: 1010 },
      { taskId: "q", from: "DEAD", to: "SCHEDULED", atMs: 3000 },
    ],
    tasks,
    tasksAfterReconcile: tasks.map((t) => ({ ...t })),
  };
}

const failing = (h: History) =>
  check(h)
    .filter((v) => !v.ok)
    .map((v) => v.rule);

describe("the chaos checker", () => {
  it("passes a clean history on every rule", () => {
    expect(failing(clean())).toEqual([]);
  });

  const breaks: Array<[string, (h: History) => History]> = [
    ["nothing_lost", (h) => ({ ...h, tasks: h.tasks.filter((t) => t.id !== "t1") })],
    [
      "no_early_execution",
      (h) => ({
        ...h,
        executions: [
          ...h.executions,
          {
            taskId: "x",
            fencingToken: "99",
            attempt: 1,
            node: "w",
            startedAtMs: 100,
            finishedAtMs: 101,
          },
        ].filter((e) => e.taskId !== "x" || e.fencingToken === "99"),
      }),
    ],
    [
      "one_execution_per_token",
      (h) => ({ ...h, executions: [...h.executions, { ...h.executions[1]!, node: "w9" }] }),
    ],
    [
      "last_token_commits",
      (h) => ({
        ...h,
        tasks: h.tasks.map((t) => (t.id === "t1" ? { ...t, fencingToken: "6" } : t)),
        tasksAfterReconcile: h.tasks.map((t) => (t.id === "t1" ? { ...t, fencingToken: "6" } : t)),
      }),
    ],
    [
      "cron_once_and_at_least_once",
      (h) => ({
        ...h,
        tasks: [...h.tasks, row("c2", { scheduleId: "s", scheduledForMs: 2000 })],
        tasksAfterReconcile: [...h.tasks, row("c2", { scheduleId: "s", scheduledForMs: 2000 })],
      }),
    ],
    [
      "dag_order",
      (h) => ({
        ...h,
        executions: h.executions.map((e) => (e.taskId === "b" ? { ...e, startedAtMs: 1015 } : e)),
      }),
    ],
    [
      "one_task_per_idempotency_key",
      (h) => ({ ...h, submitted: [...h.submitted, { ...h.submitted[0]!, taskId: "t9" }] }),
    ],
    [
      "terminal_stays_terminal",
      (h) => ({
        ...h,
        transitions: [
          ...h.transitions,
          { taskId: "t1", from: "COMPLETED", to: "SCHEDULED", atMs: 1100 },
        ],
      }),
    ],
    [
      "reconciler_idempotent",
      (h) => ({
        ...h,
        tasksAfterReconcile: h.tasks.map((t) => (t.id === "a" ? { ...t, fencingToken: "11" } : t)),
      }),
    ],
  ];
  it.each(breaks)("fails %s, and only it, on a history that breaks it", (rule, breakIt) => {
    const verdicts = check(breakIt(clean()));
    const broken = verdicts.filter((v) => !v.ok);
    expect(broken.map((v) => v.rule)).toContain(rule);
    expect(broken.find((v) => v.rule === rule)!.counterexamples.length).toBeGreaterThan(0);
  });

  it("fails cancelled_never_ran when a task cancelled with 200 ran", () => {
    const h = clean();
    const ran = {
      ...h,
      executions: [
        ...h.executions,
        {
          taskId: "x",
          fencingToken: "12",
          attempt: 1,
          node: "w",
          startedAtMs: 5001,
          finishedAtMs: 5002,
        },
      ],
    };
    expect(failing(ran)).toContain("cancelled_never_ran");
  });

  it("fails a required cron occurrence that never completed", () => {
    const h = clean();
    const missed = {
      ...h,
      requiredOccurrences: [...h.requiredOccurrences, { scheduleId: "s", scheduledForMs: 3000 }],
    };
    expect(
      check(missed).find((v) => v.rule === "cron_once_and_at_least_once")!.counterexamples,
    ).toEqual(["occurrence s@3000 never completed"]);
  });
});
