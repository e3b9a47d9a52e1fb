/** bench:e2e --runs: the children's flags and the medians over runs and find-max passes (bench/e2e-runs.ts). */
import { describe, expect, it } from "vitest";
import {
  childArgs,
  type RunReport,
  summarisePasses,
  summariseRuns,
  type TimedRun,
} from "../../../bench/e2e-runs.js";
import { median } from "../../../bench/stats.js";

const figures = (cps: number, p99: number, cpu: number, lost = 0) => ({
  completed_per_s: cps,
  worker_start: { p50_ms: Math.round(p99 / 10), p99_ms: p99, max_ms: p99 * 2 },
  cpu_us_per_task: cpu,
  cpu_cores: { postgres: cpu / 500, node: cpu / 400 },
  lost,
  early: 0,
  duplicates: 0,
  unfinished: 0,
});

const run = (report: RunReport | null): TimedRun => ({
  started_at: "2026-12-07T21:00:00.000Z",
  ended_at: "2026-12-07T21:02:00.000Z",
  report,
});

describe("bench:e2e --runs", () => {
  it("gives each run the same flags without --runs, and with --json", () => {
    expect(childArgs(["--rate", "5000", "--runs", "3", "--one-process"])).toEqual([
      "--rate",
      "5000",
      "--one-process",
      "--json",
    ]);
    expect(childArgs(["--runs=3", "--json", "--no-peer"])).toEqual(["--json", "--no-peer"]);
  });

  it("reports the medians of both systems, the sums that must be 0, and each run's comparison", () => {
    const summary = summariseRuns([
      run({ load_avg_before: [1], ...figures(5003, 18, 231), peer: figures(5002, 37, 237) }),
      run({ load_avg_before: [1], ...figures(4999, 60, 215, 2), peer: figures(4998, 56, 241) }),
      run({ load_avg_before: [1], ...figures(5005, 16, 260), peer: figures(4997, 29, 238) }),
    ]);
    expect(summary.chronofence).toEqual({
      completed_per_s: 5003,
      worker_start_p50_ms: 2,
      worker_start_p99_ms: 18,
      cpu_us_per_task: 231,
      cpu_cores: { postgres: 0.462, node: 0.5775 },
      lost: 2,
      early: 0,
      duplicates: 0,
      unfinished: 0,
    });
    expect(summary.bullmq?.worker_start_p99_ms).toBe(37);
    expect(summary.bullmq?.cpu_us_per_task).toBe(238);
    expect(summary.p99_below_bullmq).toEqual([true, false, true]);
    expect(summary.cpu_below_bullmq).toEqual([true, true, false]);
    expect(summary.failed_runs).toBe(0);
  });

  it("takes each process group's median cores, a group missing from a run as 0 there", () => {
    const summary = summariseRuns([
      run({
        load_avg_before: [1],
        ...figures(5000, 9, 250),
        cpu_cores: { postgres: 0.5, api: 0.2 },
        peer: null,
      }),
      run({
        load_avg_before: [1],
        ...figures(5000, 9, 260),
        cpu_cores: { postgres: 0.6 },
        peer: null,
      }),
      run({
        load_avg_before: [1],
        ...figures(5000, 9, 240),
        cpu_cores: { postgres: 0.4, api: 0.1 },
        peer: null,
      }),
    ]);
    expect(summary.chronofence?.cpu_cores).toEqual({ postgres: 0.5, api: 0.1 });
  });

  it("counts a run without a report as failed, not as zeros, and a run without BullMQ in no comparison", () => {
    const summary = summariseRuns([
      run(null),
      run({ load_avg_before: [1], ...figures(1000, 7, 1100), peer: null }),
    ]);
    expect(summary.failed_runs).toBe(1);
    expect(summary.chronofence?.worker_start_p99_ms).toBe(7);
    expect(summary.bullmq).toBeNull();
    expect(summary.p99_below_bullmq).toEqual([]);
  });

  it("summarises BullMQ alone for --peer-only runs", () => {
    const summary = summariseRuns([
      run({ load_avg_before: [1], worker_start: null, peer: figures(900, 70, 600) }),
    ]);
    expect(summary.chronofence).toBeNull();
    expect(summary.bullmq?.completed_per_s).toBe(900);
  });
});

describe("bench:e2e --runs with --find-max", () => {
  const pass = (ours: number | null, theirs: number | null | "not run") => ({
    chronofence: { max_per_s: ours },
    bullmq: theirs === "not run" ? null : { max_per_s: theirs },
  });

  it("takes each system's median maximum, a pass below --from as 0, and compares pass by pass", () => {
    const summary = summarisePasses([pass(3900, 4900), pass(4900, 3900), pass(null, 4900)]);
    expect(summary.chronofence_max_per_s).toBe(3900);
    expect(summary.bullmq_max_per_s).toBe(4900);
    expect(summary.at_least_bullmq).toEqual([false, true, false]);
  });

  it("counts a pass without a report as failed, and a pass without BullMQ in no comparison", () => {
    const summary = summarisePasses([null, pass(6300, "not run")]);
    expect(summary.failed_passes).toBe(1);
    expect(summary.chronofence_max_per_s).toBe(6300);
    expect(summary.bullmq_max_per_s).toBeNull();
    expect(summary.at_least_bullmq).toEqual([]);
  });
});

describe("median", () => {
  it("takes the middle value, the upper middle of an even count, and NaN of none", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(3);
    expect(median([])).toBeNaN();
  });
});
