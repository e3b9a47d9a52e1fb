import { describe, expect, it } from "vitest";
import { type RunNode, WorkflowRun } from "../../../src/domain/workflow-run.js";
import type { TriggerRule } from "../../../src/domain/workflow-trigger.js";

const n = (
  key: string,
  dependsOn: string[] = [],
  triggerRule: TriggerRule = "all_success",
): RunNode => ({
  key,
  dependsOn,
  triggerRule,
});

const diamond = [n("a"), n("b", ["a"]), n("c", ["a"]), n("d", ["b", "c"])];

describe("WorkflowRun", () => {
  it("runs a diamond: d only after both b and c", () => {
    const run = new WorkflowRun(diamond, false);
    expect(run.state("a")).toBe("SCHEDULED");
    expect(run.state("d")).toBe("WAITING");
    expect(run.finish("a", "COMPLETED").released).toEqual(["b", "c"]);
    expect(run.finish("b", "COMPLETED").released).toEqual([]);
    expect(run.finish("c", "COMPLETED").released).toEqual(["d"]);
    expect(run.status()).toBe("RUNNING");
    run.finish("d", "COMPLETED");
    expect(run.status()).toBe("COMPLETED");
  });

  it("propagates skips down the graph and ends FAILED", () => {
    const run = new WorkflowRun(
      [
        n("a"),
        n("b", ["a"]),
        n("c", ["b"]),
        n("d", ["c"], "all_done"),
        n("e", ["c"], "none_failed"),
      ],
      false,
    );
    const step = run.finish("a", "DEAD");
    expect(step.skipped).toEqual(["b", "c"]);
    // none_failed counts a skipped parent as fine; all_done runs after anything.
    expect(step.released).toEqual(["d", "e"]);
    run.finish("d", "COMPLETED");
    run.finish("e", "COMPLETED");
    expect(run.status()).toBe("FAILED");
  });

  it("releases one_success at the first completed parent, and one_failed handlers on death", () => {
    const run = new WorkflowRun(
      [n("a"), n("b"), n("any", ["a", "b"], "one_success"), n("onfail", ["a", "b"], "one_failed")],
      false,
    );
    expect(run.finish("b", "COMPLETED").released).toEqual(["any"]);
    expect(run.finish("a", "DEAD").released).toEqual(["onfail"]);
  });

  it("fail_fast: a death cancels every pending node but not a running one", () => {
    const run = new WorkflowRun([n("a"), n("b"), n("c"), n("d", ["a", "b", "c"])], true);
    run.start("c");
    expect(run.finish("a", "DEAD").cancelled.sort()).toEqual(["b", "d"]);
    expect(run.state("c")).toBe("RUNNING");
    expect(run.status()).toBe("RUNNING");
    expect(run.finish("c", "COMPLETED").released).toEqual([]);
    expect(run.status()).toBe("FAILED");
  });

  it("finishing twice changes nothing more; cancel ends it CANCELLED", () => {
    const run = new WorkflowRun(diamond, false);
    run.finish("a", "COMPLETED");
    expect(run.finish("a", "COMPLETED")).toEqual({ released: [], skipped: [], cancelled: [] });
    expect(run.cancel().sort()).toEqual(["b", "c", "d"]);
    expect(run.status()).toBe("CANCELLED");
  });
});
