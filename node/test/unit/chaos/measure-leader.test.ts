/**
 * H4 (docs/evidence.md): `chaos:measure` found the leader, then asked for it
 * again, and a lease that expired in between answered "none": the trial
 * died. seenWithin returns the answer it saw.
 */
import { describe, expect, it } from "vitest";
import { seenWithin } from "../../../../bench/chaos/measure.js";

describe("the leader a failover trial uses", () => {
  it("is the one seen, even if the next question would answer none", async () => {
    const answers = [undefined, undefined, "node-2", undefined, undefined];
    let asked = 0;
    const leader = await seenWithin(async () => answers[asked++], 5_000, 1);
    expect(leader).toBe("node-2");
    expect(asked).toBe(3);
  });

  it("is none once the time is up, and a failing question counts as no answer", async () => {
    let asked = 0;
    const leader = await seenWithin(
      async () => {
        asked++;
        if (asked % 2 === 0) throw new Error("database away");
        return undefined;
      },
      50,
      5,
    );
    expect(leader).toBeUndefined();
    expect(asked).toBeGreaterThan(2);
  });
});
