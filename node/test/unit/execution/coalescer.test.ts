import { describe, expect, it, vi } from "vitest";
import { Coalescer, type Settled } from "../../../src/adapters/pg/coalescer.js";

/** A flush the test answers by hand: each call's batch and a way to settle it. */
function manualFlush() {
  const calls: Array<{ inputs: number[]; answer: (a: Array<Settled<number>> | Error) => void }> =
    [];
  const flush = (inputs: number[]) =>
    new Promise<Array<Settled<number>>>((resolve, reject) =>
      calls.push({
        inputs,
        answer: (a) => (a instanceof Error ? reject(a) : resolve(a)),
      }),
    );
  const doubled = (inputs: number[]) => inputs.map((x) => ({ ok: true as const, value: x * 2 }));
  return { calls, flush, doubled };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("Coalescer", () => {
  it("calls of one turn share one flush; each caller gets its own answer", async () => {
    const m = manualFlush();
    const c = new Coalescer(m.flush, { maxBatch: 100 });
    const answers = Promise.all([c.submit(1), c.submit(2), c.submit(3)]);
    await turn();
    expect(m.calls.map((x) => x.inputs)).toEqual([[1, 2, 3]]);
    m.calls[0]!.answer(m.doubled([1, 2, 3]));
    expect(await answers).toEqual([2, 4, 6]);
  });

  it("while maxInFlight flushes are out, new calls wait and then go together", async () => {
    const m = manualFlush();
    const c = new Coalescer(m.flush, { maxBatch: 100, maxInFlight: 1 });
    const first = c.submit(1);
    await turn();
    const later = [c.submit(2), c.submit(3)];
    await turn();
    const more = c.submit(4);
    await turn();
    expect(m.calls.map((x) => x.inputs)).toEqual([[1]]);
    m.calls[0]!.answer(m.doubled([1]));
    expect(await first).toBe(2);
    await turn();
    expect(m.calls.map((x) => x.inputs)).toEqual([[1], [2, 3, 4]]);
    m.calls[1]!.answer(m.doubled([2, 3, 4]));
    expect(await Promise.all([...later, more])).toEqual([4, 6, 8]);
  });

  it("with a linger, calls of later turns join the first until it leaves; a full batch leaves at once", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout"] });
    try {
      const m = manualFlush();
      const c = new Coalescer(m.flush, { maxBatch: 3, lingerMs: 20 });
      const lingering = [c.submit(1)];
      await turn();
      lingering.push(c.submit(2));
      vi.advanceTimersByTime(19);
      await turn();
      expect(m.calls).toHaveLength(0);
      vi.advanceTimersByTime(1);
      expect(m.calls.map((x) => x.inputs)).toEqual([[1, 2]]);
      const full = [c.submit(3), c.submit(4), c.submit(5)];
      expect(m.calls.map((x) => x.inputs)).toEqual([
        [1, 2],
        [3, 4, 5],
      ]);
      for (const call of m.calls) call.answer(m.doubled(call.inputs));
      expect(await Promise.all([...lingering, ...full])).toEqual([2, 4, 6, 8, 10]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("an urgent call does not linger: it sends the lingering batch in the next turn", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const m = manualFlush();
      // Even numbers are urgent (as a start is among completions).
      const c = new Coalescer(m.flush, {
        maxBatch: 100,
        maxInFlight: 1,
        lingerMs: 20,
        urgent: (x: number) => x % 2 === 0,
      });
      const first = [c.submit(1), c.submit(3)];
      await turn();
      expect(m.calls).toHaveLength(0);
      first.push(c.submit(2));
      await turn();
      expect(m.calls.map((x) => x.inputs)).toEqual([[1, 3, 2]]);
      // While the flush is out, a lingering call waits; once it is back, it lingers again…
      const next = [c.submit(5)];
      m.calls[0]!.answer(m.doubled([1, 3, 2]));
      expect(await Promise.all(first)).toEqual([2, 6, 4]);
      await turn();
      expect(m.calls).toHaveLength(1);
      // …until an urgent call joins it.
      next.push(c.submit(4));
      await turn();
      expect(m.calls.map((x) => x.inputs)).toEqual([
        [1, 3, 2],
        [5, 4],
      ]);
      m.calls[1]!.answer(m.doubled([5, 4]));
      expect(await Promise.all(next)).toEqual([10, 8]);
      vi.advanceTimersByTime(20);
      expect(m.calls).toHaveLength(2); // the cleared linger sends nothing more
    } finally {
      vi.useRealTimers();
    }
  });

  it("under a high load every call lingers, urgent ones too; a light load, even in bursts, does not", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const m = manualFlush();
      let nowMs = 0;
      // Every call urgent (as starts are): only the busy linger holds them.
      const c = new Coalescer(m.flush, {
        maxBatch: 1000,
        maxInFlight: 1,
        urgent: () => true,
        busyLingerMs: 3,
        busyCallsPerS: 1000,
        nowMs: () => nowMs,
      });
      // A burst of 50 calls after a quiet window: 50 in 200 ms is 250 a second, not busy.
      nowMs = 200;
      const burst = Promise.all(Array.from({ length: 50 }, (_, i) => c.submit(i)));
      await turn();
      expect(m.calls).toHaveLength(1);
      m.calls[0]!.answer(m.doubled(m.calls[0]!.inputs));
      expect((await burst).length).toBe(50);
      // 150 calls in the next 100 ms: 1,500 a second, busy. The next call lingers 3 ms.
      for (let i = 0; i < 150; i++) c.submit(1000 + i).catch(() => undefined);
      await turn();
      m.calls[1]!.answer(m.doubled(m.calls[1]!.inputs));
      await turn();
      nowMs = 300;
      const lingering = [c.submit(7)];
      await turn();
      expect(m.calls).toHaveLength(2);
      lingering.push(c.submit(8));
      vi.advanceTimersByTime(2);
      await turn();
      expect(m.calls).toHaveLength(2);
      vi.advanceTimersByTime(1);
      expect(m.calls.map((x) => x.inputs)[2]).toEqual([7, 8]);
      m.calls[2]!.answer(m.doubled([7, 8]));
      expect(await Promise.all(lingering)).toEqual([14, 16]);
      // A quiet window later (two calls in a second) the load is light again: no linger.
      nowMs = 1300;
      const light = c.submit(9);
      await turn();
      expect(m.calls.map((x) => x.inputs)[3]).toEqual([9]);
      m.calls[3]!.answer(m.doubled([9]));
      expect(await light).toBe(18);
    } finally {
      vi.useRealTimers();
    }
  });

  it("a batch not yet full waits for partialInFlight; full batches leave up to maxInFlight", async () => {
    const m = manualFlush();
    const c = new Coalescer(m.flush, { maxBatch: 2, partialInFlight: 1, maxInFlight: 2 });
    const first = c.submit(1);
    await turn();
    expect(m.calls.map((x) => x.inputs)).toEqual([[1]]);
    // One statement is out: a partial batch waits, a full one takes the second place.
    const rest = [2, 3, 4].map((x) => c.submit(x));
    await turn();
    expect(m.calls.map((x) => x.inputs)).toEqual([[1], [2, 3]]);
    m.calls[1]!.answer(m.doubled([2, 3]));
    expect(await Promise.all(rest.slice(0, 2))).toEqual([4, 6]);
    await turn();
    await turn();
    expect(m.calls).toHaveLength(2); // [4] still waits: the first statement is out
    m.calls[0]!.answer(m.doubled([1]));
    expect(await first).toBe(2);
    await turn();
    expect(m.calls.map((x) => x.inputs)).toEqual([[1], [2, 3], [4]]);
    m.calls[2]!.answer(m.doubled([4]));
    expect(await rest[2]).toBe(8);
  });

  it("splits at maxBatch", async () => {
    const m = manualFlush();
    const c = new Coalescer(m.flush, { maxBatch: 2 });
    const all = Promise.all([1, 2, 3, 4, 5].map((x) => c.submit(x)));
    await turn();
    expect(m.calls.map((x) => x.inputs)).toEqual([[1, 2], [3, 4], [5]]);
    for (const call of m.calls) call.answer(m.doubled(call.inputs));
    expect(await all).toEqual([2, 4, 6, 8, 10]);
  });

  it("a caller's own error reaches only it; a failed flush reaches all its callers", async () => {
    const m = manualFlush();
    const c = new Coalescer(m.flush, { maxBatch: 100 });
    const a = c.submit(1);
    const b = c.submit(2);
    await turn();
    m.calls[0]!.answer([
      { ok: true, value: 10 },
      { ok: false, error: new Error("row 2") },
    ]);
    expect(await a).toBe(10);
    await expect(b).rejects.toThrow("row 2");
    const d = c.submit(3);
    const e = c.submit(4);
    await turn();
    m.calls[1]!.answer(new Error("connection lost"));
    await expect(d).rejects.toThrow("connection lost");
    await expect(e).rejects.toThrow("connection lost");
  });
});
