/** The nemesis's plan and the seeded stream it is drawn from: one seed, one plan; only the kinds asked for. */
import { describe, expect, it } from "vitest";
import {
  DEFAULT_FAULTS,
  FAULT_KINDS,
  type PlanInput,
  parseFaultKinds,
  planFaults,
} from "../../../../bench/chaos/nemesis-plan.js";
import { Random } from "../../../../bench/chaos/random.js";

const input = (over: Partial<PlanInput> = {}): PlanInput => ({
  durationMs: 300_000,
  kinds: DEFAULT_FAULTS,
  processes: {
    api: ["api-1", "api-2"],
    dispatch: ["dispatch-1", "dispatch-2", "dispatch-3"],
    worker: ["worker-1", "worker-2", "worker-3"],
  },
  nodes: 3,
  leaseMs: 6000,
  warmupMs: 10_000,
  tailMs: 10_000,
  minGapMs: 3000,
  maxGapMs: 8000,
  ...over,
});

describe("Random", () => {
  it("gives the same numbers for the same seed, and forks streams that do not share them", () => {
    const a = new Random(42);
    const b = new Random(42);
    expect(Array.from({ length: 5 }, () => a.next())).toEqual(
      Array.from({ length: 5 }, () => b.next()),
    );
    const x = new Random(42).fork("workload");
    const y = new Random(42).fork("nemesis");
    expect(x.next()).not.toBe(y.next());
    expect(new Random(42).fork("nemesis").next()).toBe(new Random(42).fork("nemesis").next());
  });

  it("keeps ints within bounds and weights in proportion", () => {
    const r = new Random(7);
    const counts = { a: 0, b: 0 };
    for (let i = 0; i < 10_000; i++) {
      const n = r.int(3, 5);
      expect(n >= 3 && n <= 5).toBe(true);
      counts[r.weighted({ a: 1, b: 3 })]++;
    }
    expect(counts.b / counts.a).toBeGreaterThan(2.5);
    expect(counts.b / counts.a).toBeLessThan(3.5);
  });
});

describe("planFaults", () => {
  it("is decided by the seed alone", () => {
    expect(planFaults(new Random(5), input())).toEqual(planFaults(new Random(5), input()));
    expect(planFaults(new Random(5), input())).not.toEqual(planFaults(new Random(6), input()));
  });

  it("uses only the kinds asked for, within the run, with pauses that outlast the lease", () => {
    const plan = planFaults(new Random(9), input({ kinds: ["pause", "partition_redis"] }));
    expect(plan.length).toBeGreaterThan(5);
    for (const f of plan) {
      expect(["pause", "partition_redis"]).toContain(f.kind);
      expect(f.atMs).toBeGreaterThanOrEqual(10_000);
      expect(f.atMs).toBeLessThan(290_000);
      if (f.kind === "pause") {
        expect(f.holdMs).toBeGreaterThan(6000);
        expect(f.target).toMatch(/^(dispatch|worker)-\d$/);
      } else expect(["1", "2", "3"]).toContain(f.target);
    }
  });

  it("skews clocks behind by default and ahead only when asked", () => {
    for (const f of planFaults(new Random(3), input({ kinds: ["clock_skew"] })))
      expect(f.value).toBeLessThan(0);
    for (const f of planFaults(new Random(3), input({ kinds: ["clock_ahead"] })))
      expect(f.value).toBeGreaterThan(0);
  });

  it("plans nothing for no kinds", () => {
    expect(planFaults(new Random(1), input({ kinds: [] }))).toEqual([]);
  });
});

describe("parseFaultKinds", () => {
  it("defaults to every kind but clock_ahead, accepts none, refuses unknown kinds by name", () => {
    expect(parseFaultKinds(undefined)).toEqual(FAULT_KINDS.filter((k) => k !== "clock_ahead"));
    expect(parseFaultKinds("none")).toEqual([]);
    expect(parseFaultKinds("kill, pause")).toEqual(["kill", "pause"]);
    expect(() => parseFaultKinds("kill,meteor")).toThrow(
      /unknown fault kind\(s\) meteor; known: kill/,
    );
  });
});
