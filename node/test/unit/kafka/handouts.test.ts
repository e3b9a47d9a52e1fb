import { describe, expect, it } from "vitest";
import { Handouts } from "../../../src/adapters/kafka/handouts.js";
import type { Delivery, Message } from "../../../src/ports/transport.js";

/** A handler whose answer for each message the test gives later. */
function scripted() {
  const answers: Array<{ resolve: (durable: boolean) => void; reject: (e: Error) => void }> = [];
  const handle = (_message: Message, _delivery: Delivery) =>
    new Promise<boolean>((resolve, reject) => answers.push({ resolve, reject }));
  return { handle, answers };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("Handouts", () => {
  it("frees a message's place when its handler answers, and commits only a durable prefix", async () => {
    let changes = 0;
    const handouts = new Handouts({ maxInFlight: 2, maxRetained: 10 }, () => changes++);
    const { handle, answers } = scripted();
    handouts.hand(handle, 0, "5", "a");
    handouts.hand(handle, 0, "6", "b");
    handouts.hand(handle, 0, "7", "c");
    expect(handouts.inFlight).toBe(3);
    expect(handouts.hasRoom()).toBe(false);

    answers[0]!.resolve(true);
    answers[1]!.resolve(false); // not durable: holds the commit point at 6
    answers[2]!.resolve(true);
    await settle();
    expect(handouts.inFlight).toBe(0);
    expect(changes).toBe(3);
    expect(handouts.watermarks.pending()).toEqual([{ partition: 0, offset: "6" }]);
  });

  it("treats a handler that throws as not durable: its place is freed, its offset held back", async () => {
    const handouts = new Handouts({ maxInFlight: 1, maxRetained: 10 }, () => undefined);
    const { handle, answers } = scripted();
    handouts.hand(handle, 3, "10", "a");
    handouts.hand(handle, 3, "11", "b");
    answers[0]!.reject(new Error("a bug"));
    answers[1]!.resolve(true);
    await settle();
    expect(handouts.inFlight).toBe(0);
    expect(handouts.hasRoom()).toBe(true);
    expect(handouts.watermarks.pending()).toEqual([]);
  });
});
