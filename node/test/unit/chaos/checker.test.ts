/** The chaos checker on hand-made histories: a clean one passes every rule; each broken one fails exactly its rule. */
import { describe, expect, it } from "vitest";
import { check } from "../../../../bench/chaos/checker.js";
import { decide } from "../../../../bench/chaos/dag-rules.js";
import type { History, TaskRow, WorkflowNode } from "../../../../bench/chaos/history.js";

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
      ...(
        [
          ["t1", "6", 1000],
          ["t1", "7", 1000],
          ["a", "8", 1000],
          ["b", "9", 1025],
          ["c1", "10", 2000],
        ] as const
      ).map(([taskId, fencingToken, runAtMs]) => ({
        taskId,
        from: "SCHEDULED",
        to: "ARMED",
        atMs: runAtMs - 5,
        fencingToken,
        runAtMs,
      })),
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

  it("fails no_early_attempt when a retry ran before the run_at its token was armed with", () => {
    const h = clean();
    // Token 7 (the retry) was armed due at 1008, after its backoff; it started at 1005.
    const early = {
      ...h,
      transitions: h.transitions.map((t) =>
        t.taskId === "t1" && t.fencingToken === "7" ? { ...t, runAtMs: 1008 } : t,
      ),
    };
    expect(failing(early)).toEqual(["no_early_attempt"]);
    const unarmed = {
      ...h,
      transitions: h.transitions.filter((t) => !(t.taskId === "b" && t.to === "ARMED")),
    };
    expect(check(unarmed).find((v) => v.rule === "no_early_attempt")!.counterexamples).toEqual([
      "task b ran under token 9, which was never armed",
    ]);
  });

  it("fails dag_outcome when a node did not end as its trigger rule decides", () => {
    const h = clean();
    const withB = (over: Partial<TaskRow>, rule: WorkflowNode["triggerRule"] = "all_success") => {
      const tasks = h.tasks.map((t) => (t.id === "b" ? { ...t, ...over } : t));
      return {
        ...h,
        tasks,
        tasksAfterReconcile: tasks,
        executions: h.executions.filter((e) => e.taskId !== "b"),
        workflowNodes: h.workflowNodes.map((n) =>
          n.key === "b" ? { ...n, triggerRule: rule } : n,
        ),
      };
    };
    // a COMPLETED: an all_success child must run, not be skipped.
    expect(failing(withB({ status: "SKIPPED", fencingToken: null }))).toEqual(["dag_outcome"]);
    // a COMPLETED: a one_failed child must be skipped, not run.
    expect(failing(withB({ status: "SKIPPED", fencingToken: null }, "one_failed"))).toEqual([]);
    expect(failing(withB({ status: "CANCELLED", fencingToken: null }))).toEqual(["dag_outcome"]);
  });

  it("fails dag_outcome when a released node ended against its intent", () => {
    const h = clean();
    const tasks = h.tasks.map((t) => (t.id === "b" ? { ...t, status: "DEAD" } : t));
    expect(failing({ ...h, tasks, tasksAfterReconcile: tasks })).toContain("dag_outcome");
  });

  it("decides each trigger rule from the parents' statuses as docs/api.md's table says", () => {
    expect(decide("all_success", ["COMPLETED", "COMPLETED"])).toBe("release");
    expect(decide("all_success", ["COMPLETED", "RUNNING"])).toBe("undecided");
    expect(decide("all_success", ["SKIPPED", "RUNNING"])).toBe("skip");
    expect(decide("all_done", ["DEAD", "CANCELLED"])).toBe("release");
    expect(decide("all_done", ["DEAD", "WAITING"])).toBe("undecided");
    expect(decide("one_success", ["COMPLETED", "RUNNING"])).toBe("release");
    expect(decide("one_success", ["DEAD", "SKIPPED"])).toBe("skip");
    expect(decide("one_failed", ["DEAD", "RUNNING"])).toBe("release");
    expect(decide("one_failed", ["COMPLETED", "CANCELLED"])).toBe("skip");
    expect(decide("none_failed", ["COMPLETED", "SKIPPED", "CANCELLED"])).toBe("release");
    expect(decide("none_failed", ["DEAD", "RUNNING"])).toBe("skip");
    expect(decide("none_failed", ["COMPLETED", "SCHEDULED"])).toBe("undecided");
  });

  it("accepts CANCELLED or the intent for a task whose cancel got no answer, only the intent after a 409", () => {
    const h = clean();
    const cancelT1 = (status: number, rowStatus: string) => {
      const tasks = h.tasks.map((t) => (t.id === "t1" ? { ...t, status: rowStatus } : t));
      return {
        ...h,
        tasks,
        tasksAfterReconcile: tasks,
        cancels: [...h.cancels, { taskId: "t1", sentAtMs: 700, status, taskStatus: null }],
      };
    };
    expect(failing(cancelT1(0, "COMPLETED"))).not.toContain("nothing_lost");
    expect(failing(cancelT1(503, "CANCELLED"))).not.toContain("nothing_lost");
    expect(failing(cancelT1(409, "CANCELLED"))).toContain("nothing_lost");
  });

  /** The transition of a task's insert (from "" to SCHEDULED), due at `runAtMs`. */
  const inserted = (taskId: string, atMs: number, runAtMs: number) => ({
    taskId,
    from: "",
    to: "SCHEDULED",
    atMs,
    fencingToken: null,
    runAtMs,
  });

  it("judges a retried cron task's first run by its first run_at, not the retry's", () => {
    const h = clean();
    // c1 ran at 2001 (its occurrence 2000), lost its lease and was retried: the row's run_at is 5000.
    const tasks = h.tasks.map((t) => (t.id === "c1" ? { ...t, runAtMs: 5000 } : t));
    const retried = { ...h, tasks, tasksAfterReconcile: tasks };
    expect(failing(retried)).toEqual([]);
    const insertedLate = {
      ...retried,
      transitions: [...h.transitions, inserted("c1", 1500, 2400)],
    };
    expect(failing(insertedLate)).toEqual(["no_early_execution"]);
  });

  it("judges a task whose 201 was lost by the run_at it was inserted with, not its replay's (chaos seed 3002)", () => {
    const h = clean();
    // Only the resubmit of k1 was answered, after t1 had run once and been retried: its answer
    // carries the retry's run_at, 1500. t1 was inserted due at 1000 and first ran at 1001.
    const onlyReplay = {
      ...h,
      submitted: h.submitted
        .filter((_, i) => i !== 0)
        .map((t) => (t.taskId === "t1" ? { ...t, runAtMs: 1500, ackedAtMs: 1600 } : t)),
      transitions: [...h.transitions, inserted("t1", 400, 1000)],
    };
    expect(failing(onlyReplay)).toEqual([]);
    // Inserted due at 1003, a run at 1001 is early whatever the replay said.
    const early = {
      ...onlyReplay,
      transitions: [...h.transitions, inserted("t1", 400, 1003)],
    };
    expect(failing(early)).toContain("no_early_execution");
  });

  it("judges a task by its first acknowledgement's run_at, not a later replay's", () => {
    const h = clean();
    // The resubmit of k1 answered after t1 was retried, with the retry's later run_at.
    const replayed = {
      ...h,
      submitted: h.submitted.map((t, i) => (i === 1 ? { ...t, runAtMs: 1500 } : t)),
    };
    expect(failing(replayed)).toEqual([]);
  });
});
