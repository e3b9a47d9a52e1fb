/**
 * The documented request schemas (TaskSubmission, WorkflowNodeSubmission)
 * accept what validation accepts and refuse what it refuses, for every rule
 * a schema can say (the tenant's limits, the horizon and JSON depth are
 * checked on top and left out here): the document cannot promise more, or
 * less, than the server does.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type SubmissionContext,
  TaskSubmission,
  validateSubmission,
} from "../../../src/domain/submission.js";
import { validateWorkflow, WorkflowSubmission } from "../../../src/domain/workflow.js";
import { propertyParams } from "../../support/property.js";

const ctx: SubmissionContext = {
  tenantId: "t",
  nowMs: 1_700_000_000_000,
  horizonMs: Number.MAX_SAFE_INTEGER,
  maxPayloadBytes: 1_000_000,
  retryDefaults: {},
  newTaskId: () => "0190a000-0000-7000-8000-000000000001",
};
const accepted = (run: () => unknown) => {
  try {
    run();
    return true;
  } catch {
    return false;
  }
};

const fieldValues = {
  type: fc.constantFrom("a", "report.build", "", "a b", "x".repeat(129), 7),
  run_at: fc.constantFrom("2024-01-01T00:00:00Z", "2024-01-01t00:00:00+02:00", "tomorrow", 5),
  delay_ms: fc.constantFrom(0, 10, -1, 1.5, "10"),
  priority: fc.constantFrom("critical", "bulk", "urgent", 1),
  idempotency_key: fc.constantFrom("k-1", "", "has space", 3),
  max_attempts: fc.constantFrom(1, 100, 0, 101),
  timeout_ms: fc.constantFrom(1, 86_400_000, 0, 86_400_001),
  backoff: fc.constantFrom(
    { strategy: "fixed" },
    { base_ms: 10, max_ms: 20 },
    { strategy: "linear" },
    { base_ms: 0 },
    "fast",
  ),
  payload: fc.constantFrom(null, { a: 1 }, [1, "x"]),
  extra: fc.constantFrom(1),
};
const submission = fc.record(fieldValues, { requiredKeys: [] });

const CASES: unknown[] = [
  { type: "a" },
  { type: "a", run_at: "2024-01-01T00:00:00Z", delay_ms: 10 },
  { type: "a", run_at: "2024-01-01t00:00:00z" },
  { type: "a", payload: { deep: [1, { x: null }] }, priority: "critical", idempotency_key: "k" },
  { type: "a", backoff: { strategy: "fixed", base_ms: 5, max_ms: 10 } },
  { type: "a", backoff: { strategy: "fixed", extra: 1 } },
  { type: "a", unknown: true },
  { payload: 1 },
  "a",
  null,
  [],
];

describe("TaskSubmission (the documented schema)", () => {
  it.each(CASES.map((c) => [JSON.stringify(c), c]))(
    "agrees with validateSubmission on %s",
    (_, input) => {
      expect(TaskSubmission.safeParse(input).success).toBe(
        accepted(() => validateSubmission(input, ctx)),
      );
    },
  );

  it("agrees with validateSubmission on every combination of field values", () => {
    fc.assert(
      fc.property(submission, (input) => {
        // Backoff base above max is a rule across defaults, checked by validation only.
        fc.pre(
          !(
            input.backoff &&
            typeof input.backoff === "object" &&
            "base_ms" in input.backoff &&
            !("max_ms" in input.backoff)
          ),
        );
        expect(TaskSubmission.safeParse(input).success).toBe(
          accepted(() => validateSubmission(input, ctx)),
        );
      }),
      propertyParams({ numRuns: 2000 }),
    );
  });
});

describe("WorkflowSubmission (the documented schema)", () => {
  it("agrees with validateWorkflow on the node fields", () => {
    const node = fc.record(
      {
        key: fc.constantFrom("a", "", "a b"),
        type: fc.constantFrom("x", "bad type"),
        trigger_rule: fc.constantFrom("all_done", "sometimes"),
        idempotency_key: fc.constantFrom("k"),
        delay_ms: fc.constantFrom(5, -5),
        depends_on: fc.constantFrom([], "a"),
      },
      { requiredKeys: ["key"] },
    );
    fc.assert(
      fc.property(node, fc.constantFrom(undefined, true, "yes"), (n, failFast) => {
        const input = failFast === undefined ? { nodes: [n] } : { nodes: [n], fail_fast: failFast };
        expect(WorkflowSubmission.safeParse(input).success).toBe(
          accepted(() => validateWorkflow(input, ctx)),
        );
      }),
      propertyParams({ numRuns: 1000 }),
    );
  });
});
