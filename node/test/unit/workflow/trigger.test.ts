import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  decideTrigger,
  PARENT_OUTCOMES,
  type ParentOutcome,
  TRIGGER_RULES,
  tallyOf,
} from "../../../src/domain/workflow-trigger.js";
import { propertyParams } from "../../support/property.js";

const C = "COMPLETED";
const D = "DEAD";
const S = "SKIPPED";
const X = "CANCELLED";

describe("decideTrigger", () => {
  it.each([
    // rule, parents, finished so far, decision
    ["all_success", 2, [C], "wait"],
    ["all_success", 2, [C, C], "release"],
    ["all_success", 3, [D], "skip"],
    ["all_success", 3, [S], "skip"],
    ["all_success", 3, [X], "skip"],
    ["all_done", 2, [D], "wait"],
    ["all_done", 2, [D, S], "release"],
    ["all_done", 2, [X, C], "release"],
    ["one_success", 3, [C], "release"],
    ["one_success", 3, [D, S], "wait"],
    ["one_success", 3, [D, S, X], "skip"],
    ["one_failed", 3, [D], "release"],
    ["one_failed", 3, [C, C], "wait"],
    ["one_failed", 3, [C, C, S], "skip"],
    ["none_failed", 3, [C, S], "wait"],
    ["none_failed", 3, [C, S, X], "release"],
    ["none_failed", 3, [C, D], "skip"],
  ] as const)("%s with %i parents after %j: %s", (rule, total, finished, decision) => {
    expect(decideTrigger(rule, tallyOf(total, finished))).toBe(decision);
  });

  it("releases a root whatever its rule", () => {
    for (const rule of TRIGGER_RULES) expect(decideTrigger(rule, tallyOf(0, []))).toBe("release");
  });

  const outcomes = fc.array(fc.constantFrom(...PARENT_OUTCOMES), { minLength: 1, maxLength: 8 });

  it("property: a decision, once made, never changes as more parents finish", () => {
    fc.assert(
      fc.property(fc.constantFrom(...TRIGGER_RULES), outcomes, (rule, all) => {
        let decided: string | null = null;
        for (let n = 0; n <= all.length; n++) {
          const decision = decideTrigger(rule, tallyOf(all.length, all.slice(0, n)));
          if (decided !== null && decision !== decided) return false;
          if (decision !== "wait") decided = decision;
        }
        return true;
      }),
      propertyParams(),
    );
  });

  it("property: once every parent has finished, the rule releases or skips (never waits forever)", () => {
    fc.assert(
      fc.property(fc.constantFrom(...TRIGGER_RULES), outcomes, (rule, all: ParentOutcome[]) => {
        return decideTrigger(rule, tallyOf(all.length, all)) !== "wait";
      }),
      propertyParams(),
    );
  });
});
