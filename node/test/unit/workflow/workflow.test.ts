import { describe, expect, it } from "vitest";
import type { ChronofenceError } from "../../../src/domain/errors.js";
import { MAX_WORKFLOW_NODES, validateWorkflow } from "../../../src/domain/workflow.js";

const NOW_MS = Date.parse("2030-01-01T00:00:00Z");
const ctxOf = () => {
  let n = 0;
  return {
    tenantId: "t-1",
    nowMs: NOW_MS,
    horizonMs: 365 * 86_400_000,
    maxPayloadBytes: 1000,
    retryDefaults: {},
    newTaskId: () => `id-${n++}`,
  };
};

const errorOf = (input: unknown): ChronofenceError => {
  try {
    validateWorkflow(input, ctxOf());
  } catch (error) {
    return error as ChronofenceError;
  }
  throw new Error("expected a validation error");
};

const n = (key: string, depends_on: string[] = [], extra: Record<string, unknown> = {}) => ({
  key,
  type: "noop",
  depends_on,
  ...extra,
});

describe("validateWorkflow", () => {
  it("validates each node as a task, orders parents first, and fills defaults", () => {
    const draft = validateWorkflow(
      {
        fail_fast: true,
        nodes: [
          n("c", ["a", "b"], { trigger_rule: "one_success", delay_ms: 500 }),
          n("b", ["a"], { run_at: "2030-01-01T01:00:00Z", priority: "critical" }),
          n("a", [], { payload: { x: 1 }, max_attempts: 5 }),
        ],
      },
      ctxOf(),
    );
    expect(draft.id).toBe("id-0");
    expect(draft.failFast).toBe(true);
    expect(draft.nodes.map((node) => node.key)).toEqual(["a", "b", "c"]);
    const [a, b, c] = draft.nodes;
    expect(a).toMatchObject({ triggerRule: "all_success", notBeforeMs: null, delayMs: 0 });
    expect(a!.task).toMatchObject({ payloadJson: '{"x":1}', maxAttempts: 5, runAtMs: NOW_MS });
    expect(b).toMatchObject({ notBeforeMs: NOW_MS + 3_600_000, delayMs: 0 });
    expect(b!.task.priority).toBe("critical");
    expect(c).toMatchObject({ triggerRule: "one_success", notBeforeMs: null, delayMs: 500 });
    expect(c!.task.runAtMs).toBe(NOW_MS + 500);
    expect(new Set(draft.nodes.map((node) => node.task.id)).size).toBe(3);
  });

  it("names one cycle in the 422", () => {
    const error = errorOf({ nodes: [n("a", ["c"]), n("b", ["a"]), n("c", ["b"]), n("d", ["a"])] });
    expect(error.code).toBe("unprocessable");
    expect(error.details).toMatchObject({ rule: "cycle" });
    const cycle = error.details!.cycle as string[];
    expect(cycle).toHaveLength(4);
    expect(error.message).toBe(`workflow has a cycle: ${cycle.join(" → ")}`);
    expect(error.message).toMatch(
      /^workflow has a cycle: (a → b → c → a|b → c → a → b|c → a → b → c)$/,
    );
  });

  it.each([
    [{ nodes: [n("a"), n("a")] }, "duplicate_key"],
    [{ nodes: [n("a", ["zz"])] }, "unknown_dependency"],
    [{ nodes: [n("a", ["a"])] }, "self_dependency"],
    [{ nodes: [n("a"), n("b", ["a", "a"])] }, "duplicate_dependency"],
    [{ nodes: [] }, "too_many_nodes"],
    [
      { nodes: Array.from({ length: MAX_WORKFLOW_NODES + 1 }, (_, i) => n(`k${i}`)) },
      "too_many_nodes",
    ],
  ])("refuses %# with 422 %s", (input, rule) => {
    const error = errorOf(input);
    expect(error.code).toBe("unprocessable");
    expect(error.details?.rule).toBe(rule);
  });

  it("accepts exactly 10,000 nodes", () => {
    const nodes = Array.from({ length: MAX_WORKFLOW_NODES }, (_, i) =>
      n(`k${i}`, i === 0 ? [] : [`k${i - 1}`]),
    );
    expect(validateWorkflow({ nodes }, ctxOf()).nodes).toHaveLength(MAX_WORKFLOW_NODES);
  });

  it("reuses the task rules, naming the node by index", () => {
    const error = errorOf({ nodes: [n("a"), n("b", [], { max_attempts: 0 })] });
    expect(error.code).toBe("unprocessable");
    expect(error.details).toMatchObject({ index: 1 });
    expect(errorOf({ nodes: [n("a", [], { bogus: 1 })] }).code).toBe("invalid_request");
    expect(errorOf({ nodes: [{ type: "noop" }] }).code).toBe("invalid_request");
    expect(errorOf({ nodes: [n("a")], extra: 1 }).code).toBe("invalid_request");
    expect(errorOf({ nodes: [n("a", [], { trigger_rule: "sometimes" })] }).code).toBe(
      "unprocessable",
    );
    expect(errorOf({ nodes: [n("has space")] }).code).toBe("unprocessable");
    expect(errorOf({ nodes: [n("a", [], { idempotency_key: "k" })] }).code).toBe("unprocessable");
    expect(
      errorOf({ nodes: [n("a", [], { run_at: "2030-01-01T00:00:00Z", delay_ms: 1 })] }).code,
    ).toBe("unprocessable");
    expect(errorOf("nope").code).toBe("invalid_request");
  });
});
