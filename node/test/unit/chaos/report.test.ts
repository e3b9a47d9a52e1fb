/** The chaos report's analysis: lateness around fault windows, duplicates by cause, the summary's counts. */
import { describe, expect, it } from "vitest";
import type { Verdict } from "../../../../bench/chaos/checker.js";
import type { Execution, History, Transition } from "../../../../bench/chaos/history.js";
import {
  buildReport,
  duplicatesByCause,
  latenessAroundFaults,
  renderMarkdown,
} from "../../../../bench/chaos/report.js";

const run = (
  taskId: string,
  token: string,
  startedAtMs: number,
  over: Partial<Execution> = {},
) => ({
  taskId,
  fencingToken: token,
  attempt: 1,
  node: "w1",
  startedAtMs,
  finishedAtMs: startedAtMs + 1,
  outcome: "ok" as const,
  ...over,
});
const step = (
  taskId: string,
  from: string,
  to: string,
  token: string,
  over: Partial<Transition> = {},
) => ({
  taskId,
  from,
  to,
  atMs: 0,
  fencingToken: token,
  runAtMs: 1000,
  errorCode: null,
  ...over,
});

const history = (executions: Execution[], transitions: Transition[]): History => ({
  submitted: [],
  requiredOccurrences: [],
  cancels: [],
  executions,
  workflowNodes: [],
  transitions,
  tasks: [],
  tasksAfterReconcile: [],
});

describe("latenessAroundFaults", () => {
  it("splits runs by whether their armed run_at fell in a fault window (plus the settle time)", () => {
    const h = history(
      [run("a", "1", 1010), run("b", "2", 20_500), run("c", "3", 60_200)],
      [
        step("a", "SCHEDULED", "ARMED", "1", { runAtMs: 1000 }),
        step("b", "SCHEDULED", "ARMED", "2", { runAtMs: 20_000 }),
        step("c", "SCHEDULED", "ARMED", "3", { runAtMs: 60_000 }),
      ],
    );
    const faults = [{ kind: "kill", target: "w1", startMs: 10_000, endMs: 16_000, detail: "" }];
    const l = latenessAroundFaults(h, faults, 5000);
    expect(l.during_faults).toMatchObject({ count: 1, max_ms: 500 });
    expect(l.outside_faults).toMatchObject({ count: 2, max_ms: 200 });
  });
});

describe("duplicatesByCause", () => {
  it("counts a rerun after an expired lease, not a retry the workload asked for or a replay", () => {
    const h = history(
      [
        run("x", "10", 100, { outcome: null }), // its worker died
        run("x", "12", 900),
        run("y", "20", 100, { outcome: "threw" }), // planned failure, then its retry
        run("y", "22", 900),
        run("z", "30", 100, { outcome: "threw" }),
        run("z", "31", 500, { outcome: null }), // its worker died, its last attempt: DEAD; then replayed
        run("z", "34", 900),
      ],
      [
        step("x", "RUNNING", "SCHEDULED", "11", { errorCode: "lease_expired" }),
        step("x", "SCHEDULED", "ARMED", "12"),
        step("y", "RUNNING", "SCHEDULED", "21", { errorCode: "chaos_planned" }),
        step("z", "RUNNING", "DEAD", "32", { errorCode: "lease_expired" }),
        step("z", "DEAD", "SCHEDULED", "33"),
        step("z", "SCHEDULED", "ARMED", "34"),
      ],
    );
    expect(duplicatesByCause(h)).toEqual({ total: 1, by_cause: { lease_expired: 1 } });
  });

  it("names re-arms and two runs under one token", () => {
    const h = history(
      [run("p", "5", 100), run("p", "7", 200), run("q", "9", 100), run("q", "9", 300)],
      [step("p", "ARMED", "SCHEDULED", "6")],
    );
    expect(duplicatesByCause(h).by_cause).toEqual({ rearmed_not_started: 1, same_token: 1 });
  });
});

describe("buildReport", () => {
  it("counts distinct acknowledged tasks, faults by kind and violations over all rules", () => {
    const h = history([], []);
    const submitted = [
      {
        taskId: "a",
        runAtMs: 1,
        ackedAtMs: 1,
        intent: "succeed" as const,
        idempotencyKey: "k",
        workflowId: null,
      },
      {
        taskId: "a",
        runAtMs: 1,
        ackedAtMs: 2,
        intent: "succeed" as const,
        idempotencyKey: "k",
        workflowId: null,
      },
      {
        taskId: "b",
        runAtMs: 1,
        ackedAtMs: 1,
        intent: "slow" as const,
        idempotencyKey: null,
        workflowId: null,
      },
    ];
    const verdicts: Verdict[] = [
      { rule: "nothing_lost", ok: false, violations: 2, counterexamples: ["task a …", "task b …"] },
      { rule: "dag_order", ok: true, violations: 0, counterexamples: [] },
    ];
    const fault = (kind: string) => ({ kind, target: "", startMs: 0, endMs: 1, detail: "" });
    const report = buildReport({
      seed: 3,
      minutes: 1,
      ratePerS: 50,
      faultKinds: ["kill"],
      startedAtMs: 0,
      history: { ...h, submitted },
      verdicts,
      faults: [fault("kill"), fault("kill"), fault("redis_flush")],
      crashes: [],
      requests: [{ op: "task.submit", api: 0, sentAtMs: 0, answeredAtMs: 1, status: 201 }],
      notSent: 0,
      quiesced: true,
      reconcile: {},
      timeline: [],
    });
    expect(report).toMatchObject({
      acked: 2,
      faults: { kill: 2, redis_flush: 1 },
      violations: 2,
      invariants: { nothing_lost: { ok: false, violations: 2 }, dag_order: { ok: true } },
      requests: { "task.submit": { "201": 1 } },
    });
    const md = renderMarkdown(report);
    expect(md).toContain("**2 invariant violation(s)**");
    expect(md).toContain("| nothing_lost | **violated** | 2 | task a …<br>task b … |");
  });
});
