/** Loop: a failing step is retried, even when reporting the failure throws too. */
import { describe, expect, it } from "vitest";
import { Loop } from "../../src/app/shared/loop.js";

describe("loop", () => {
  it("runs its step again after the step and its error report both threw", async () => {
    let steps = 0;
    const loop = new Loop(
      async () => {
        steps++;
        throw new Error("step failed");
      },
      5,
      () => {
        throw new Error("logger failed");
      },
    ).start();
    await expect.poll(() => steps, { timeout: 2000, interval: 5 }).toBeGreaterThanOrEqual(3);
    await loop.stop();
  });
});
