/**
 * The queue limiter's borrowing (app/execution/limiter.ts): the overdue
 * queue, its own slots taken, runs on the on-time queues' idle slots — up to
 * three quarters of each, never while the lender has work of its own
 * waiting — and a waiting borrower takes the first slot that frees, its own
 * or a lender's. Tasks are promises the test ends by hand.
 */
import { describe, expect, it } from "vitest";
import { QueueLimiter } from "../../../src/app/execution/limiter.js";

const TENANTS = 1000; // per-tenant cap out of the way: each task its own tenant
let tenantSeq = 0;

/** Starts a task on the limiter; `started` says whether it got a slot, `end()` finishes it. */
function task(limiter: QueueLimiter) {
  let end: () => void = () => undefined;
  const state = { started: false, end: () => end() };
  const done = limiter.run(`tenant-${tenantSeq++}`, () => {
    state.started = true;
    return new Promise<void>((resolve) => {
      end = resolve;
    });
  });
  return { state, done };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("a queue limiter with lenders", () => {
  it("runs on a lender's idle slots once its own are taken, up to three quarters of them", async () => {
    const standard = new QueueLimiter(8, TENANTS);
    const overdue = new QueueLimiter(2, TENANTS, [standard]);
    expect(overdue.reach).toBe(2 + 6);
    const late = Array.from({ length: 10 }, () => task(overdue));
    await settle();
    expect(late.filter((t) => t.state.started)).toHaveLength(8);

    // On-time work still starts at once: the quarter kept free.
    const onTime = [task(standard), task(standard)];
    await settle();
    expect(onTime.every((t) => t.state.started)).toBe(true);
    for (const t of [...late, ...onTime]) t.state.end();
  });

  it("lends nothing while the lender's own work waits", async () => {
    const standard = new QueueLimiter(4, TENANTS);
    const overdue = new QueueLimiter(1, TENANTS, [standard]);
    const own = Array.from({ length: 5 }, () => task(standard)); // one waits
    const late = [task(overdue), task(overdue)];
    await settle();
    expect(late.map((t) => t.state.started)).toEqual([true, false]);
    own[0]!.state.end(); // goes to standard's own waiter
    await settle();
    expect(own[4]!.state.started).toBe(true);
    expect(late[1]!.state.started).toBe(false);
    for (const t of [...own, ...late]) t.state.end();
  });

  it("a waiting borrower takes the first slot that frees, its own or a lender's", async () => {
    const standard = new QueueLimiter(4, TENANTS);
    const overdue = new QueueLimiter(1, TENANTS, [standard]);
    const held = [task(standard), task(standard), task(standard)]; // one left: inside the quarter
    const first = task(overdue);
    const waiting = [task(overdue), task(overdue)];
    await settle();
    expect(first.state.started).toBe(true);
    expect(waiting.some((t) => t.state.started)).toBe(false);

    held[0]!.state.end(); // a lender's slot frees: standard now lends one
    await settle();
    expect(waiting.filter((t) => t.state.started)).toHaveLength(1);
    first.state.end(); // its own frees
    await settle();
    expect(waiting.every((t) => t.state.started)).toBe(true);
    for (const t of [...held, ...waiting]) t.state.end();
    await Promise.all([...held, first, ...waiting].map((t) => t.done));
  });

  it("without lenders, waits for its own slots only", async () => {
    const alone = new QueueLimiter(2, TENANTS);
    expect(alone.reach).toBe(2);
    const tasks = [task(alone), task(alone), task(alone)];
    await settle();
    expect(tasks.map((t) => t.state.started)).toEqual([true, true, false]);
    tasks[0]!.state.end();
    await settle();
    expect(tasks[2]!.state.started).toBe(true);
    for (const t of tasks) t.state.end();
  });
});
