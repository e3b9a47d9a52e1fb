/** The chaos diagnostics' F2 check (bench/chaos/diagnose.ts missingMembers). */
import { describe, expect, it } from "vitest";
import { type GroupLag, missingMembers } from "../../../../bench/chaos/diagnose.js";

const group = (queue: string, members: string[]): GroupLag => ({
  queue,
  state: "Stable",
  members,
  lag: 0,
});

describe("missingMembers", () => {
  it("names each live worker absent from a queue's group, and nothing when all are in", () => {
    const groups = [
      group("critical", ["chronofence-worker-2.1-critical", "chronofence-worker-3.2-critical"]),
      group("standard", [
        "chronofence-worker-1.1-standard",
        "chronofence-worker-2.1-standard",
        "chronofence-worker-3.2-standard",
      ]),
    ];
    expect(missingMembers(groups, ["worker-1.1", "worker-2.1", "worker-3.2"])).toEqual([
      { queue: "critical", nodeId: "worker-1.1" },
    ]);
    // An older incarnation's member does not stand for the live one.
    expect(
      missingMembers([group("bulk", ["chronofence-worker-3.1-bulk"])], ["worker-3.2"]),
    ).toEqual([{ queue: "bulk", nodeId: "worker-3.2" }]);
    expect(missingMembers(groups.slice(1), ["worker-1.1", "worker-2.1", "worker-3.2"])).toEqual([]);
  });
});
