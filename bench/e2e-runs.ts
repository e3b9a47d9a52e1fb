/**
 * `npm run bench:e2e -- --runs N [the run's flags]`: the same run N times,
 * one after the other, each a `bench:e2e` of its own in a child process (so
 * one run's processes, keys and topics are gone before the next), then the
 * medians of what the targets name (issue 14: medians of at least 3 runs),
 * for Chronofence and for BullMQ, beside every run's figures, load average
 * and clock times. One command gives a target's row; nothing is counted by
 * hand. With --find-max, N passes and the median of each system's maximum.
 */
import os from "node:os";
import { e2eInChild } from "./e2e-child.js";
import { median } from "./stats.js";
import { round } from "./support.js";

/**
 * What a run reports of a system and what the summary gives of it, alike:
 * in a run its own figures; in the summary the medians over the runs that
 * reported (null where none did; a process group missing from a run counts
 * there as 0), and the counts summed over the runs (each must be 0).
 */
interface SystemTotals {
  completed_per_s: number | null;
  cpu_us_per_task: number | null;
  /** Cores each process group used (Postgres, the roles, the broker, …): where the CPU per task went. */
  cpu_cores: Record<string, number>;
  lost: number;
  early: number;
  duplicates: number;
  unfinished: number;
}

/** What a run reports of one system (Chronofence's figures, or its `peer`'s). */
export interface SystemFigures extends SystemTotals {
  worker_start: { p50_ms: number; p99_ms: number; max_ms: number } | null;
}

export interface RunReport extends Partial<SystemFigures> {
  load_avg_before: number[];
  peer: SystemFigures | null;
}

export interface TimedRun<R = RunReport> {
  started_at: string;
  ended_at: string;
  report: R | null;
}

/** A system over the runs (see SystemTotals). */
export interface SystemSummary extends SystemTotals {
  worker_start_p50_ms: number | null;
  worker_start_p99_ms: number | null;
}

export interface RunsSummary {
  runs: number;
  /** Runs that gave no report (a crash, a timeout): their figures are missing, not zero. */
  failed_runs: number;
  chronofence: SystemSummary | null;
  bullmq: SystemSummary | null;
  /** Per run, where both systems ran: Chronofence's p99 below BullMQ's, its CPU per task below BullMQ's. */
  p99_below_bullmq: boolean[];
  cpu_below_bullmq: boolean[];
}

const medianOrNull = (xs: ReadonlyArray<number | null | undefined>): number | null => {
  const known = xs.filter((x): x is number => typeof x === "number");
  return known.length === 0 ? null : median(known);
};

function summariseSystem(figures: ReadonlyArray<Partial<SystemFigures>>): SystemSummary | null {
  if (figures.length === 0) return null;
  const sum = (pick: (f: Partial<SystemFigures>) => number | undefined) =>
    figures.reduce((total, f) => total + (pick(f) ?? 0), 0);
  return {
    completed_per_s: medianOrNull(figures.map((f) => f.completed_per_s)),
    worker_start_p50_ms: medianOrNull(figures.map((f) => f.worker_start?.p50_ms)),
    worker_start_p99_ms: medianOrNull(figures.map((f) => f.worker_start?.p99_ms)),
    cpu_us_per_task: medianOrNull(figures.map((f) => f.cpu_us_per_task)),
    cpu_cores: medianCores(figures.map((f) => f.cpu_cores ?? {})),
    lost: sum((f) => f.lost),
    early: sum((f) => f.early),
    duplicates: sum((f) => f.duplicates),
    unfinished: sum((f) => f.unfinished),
  };
}

function medianCores(runs: ReadonlyArray<Record<string, number>>): Record<string, number> {
  const groups = new Set(runs.flatMap((cores) => Object.keys(cores)));
  return Object.fromEntries(
    [...groups].map((group) => [group, median(runs.map((cores) => cores[group] ?? 0))]),
  );
}

/** A Chronofence report carries worker_start (null with --peer-only). */
const hasOurs = (r: RunReport): boolean => r.worker_start !== undefined && r.worker_start !== null;

export function summariseRuns(runs: readonly TimedRun[]): RunsSummary {
  const reports = runs.flatMap((r) => (r.report === null ? [] : [r.report]));
  const ours = reports.filter(hasOurs);
  const both = ours.filter((r) => r.peer !== null);
  const below = (pick: (f: Partial<SystemFigures>) => number | null | undefined) =>
    both.map((r) => {
      const [a, b] = [pick(r), pick(r.peer!)];
      return typeof a === "number" && typeof b === "number" && a < b;
    });
  return {
    runs: runs.length,
    failed_runs: runs.length - reports.length,
    chronofence: summariseSystem(ours),
    bullmq: summariseSystem(reports.flatMap((r) => (r.peer === null ? [] : [r.peer]))),
    p99_below_bullmq: below((f) => f.worker_start?.p99_ms),
    cpu_below_bullmq: below((f) => f.cpu_us_per_task),
  };
}

/** The run's own flags for its children: without --runs, with --json. */
export function childArgs(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--runs") i++;
    else if (!arg.startsWith("--runs=")) out.push(arg);
  }
  if (!out.includes("--json")) out.push("--json");
  return out;
}

/**
 * Runs the children one after the other, logging each as it ends; returns
 * them, and a printer of the JSON report (--json) with their summary.
 */
async function repeat<R>(
  count: number,
  argv: readonly string[],
  json: boolean,
  noun: string,
  describe: (report: R) => string,
) {
  const log = (line: string) => {
    if (!json) console.log(line);
  };
  const args = childArgs(argv);
  const each: Array<TimedRun<R>> = [];
  for (let i = 1; i <= count; i++) {
    const started_at = new Date().toISOString();
    const report = (await e2eInChild(args, `runs: ${noun} ${i}`)) as R | null;
    const ended_at = new Date().toISOString();
    each.push({ started_at, ended_at, report });
    log(
      `${noun} ${i} (${started_at} – ${ended_at}): ${report === null ? "no report" : describe(report)}`,
    );
  }
  const printJson = (bench: string, summary: object) => {
    if (json) {
      const cores = os.cpus().length;
      const load_avg_after = os.loadavg().map(round);
      console.log(JSON.stringify({ bench, args, cores, load_avg_after, ...summary, each }));
    }
  };
  return { each, log, printJson };
}

const coresText = (cores: Record<string, number> | undefined): string =>
  Object.entries(cores ?? {})
    .map(([group, n]) => `${group} ${n}`)
    .join(", ");

const figuresLine = (name: string, f: Partial<SystemFigures> | null): string =>
  f === null
    ? `${name} n/a`
    : `${name} ${f.completed_per_s}/s, worker start p50 ${f.worker_start?.p50_ms} / p99 ${f.worker_start?.p99_ms} ms, ` +
      `${f.cpu_us_per_task} µs per task (cores: ${coresText(f.cpu_cores)}), lost ${f.lost}, early ${f.early}, duplicates ${f.duplicates}`;

const summaryLine = (name: string, s: SystemSummary | null): string =>
  s === null
    ? `${name} n/a`
    : `${name} ${s.completed_per_s}/s, worker start p50 ${s.worker_start_p50_ms} / p99 ${s.worker_start_p99_ms} ms, ` +
      `${s.cpu_us_per_task} µs per task (median cores: ${coresText(s.cpu_cores)}); over all runs lost ${s.lost}, early ${s.early}, duplicates ${s.duplicates}, unfinished ${s.unfinished}`;

export async function repeatRuns(count: number, argv: readonly string[], json: boolean) {
  const { each, log, printJson } = await repeat<RunReport>(
    count,
    argv,
    json,
    "run",
    (r) =>
      `load average before ${r.load_avg_before.join(" ")}; ` +
      `${figuresLine("Chronofence", hasOurs(r) ? r : null)}; ${figuresLine("BullMQ", r.peer)}`,
  );
  const summary = summariseRuns(each);
  log(`medians of ${count} runs (${summary.failed_runs} without a report):`);
  log(`  ${summaryLine("Chronofence", summary.chronofence)}`);
  log(`  ${summaryLine("BullMQ", summary.bullmq)}`);
  log(
    `  per run, Chronofence's p99 below BullMQ's: ${JSON.stringify(summary.p99_below_bullmq)}; ` +
      `its CPU per task below BullMQ's: ${JSON.stringify(summary.cpu_below_bullmq)}`,
  );
  printJson("e2e-runs", summary);
}

/** What a --find-max pass reports of each system's maximum (e2e-find-max.ts). */
export interface FindMaxPass {
  chronofence: { max_per_s: number | null };
  bullmq: { max_per_s: number | null } | null;
}

export interface PassesSummary {
  passes: number;
  failed_passes: number;
  /** Medians of each system's maximum; a pass whose first step failed counts as 0 (below --from). */
  chronofence_max_per_s: number | null;
  bullmq_max_per_s: number | null;
  /** Per pass where both systems ran: Chronofence's maximum at least BullMQ's. */
  at_least_bullmq: boolean[];
}

export function summarisePasses(passes: ReadonlyArray<FindMaxPass | null>): PassesSummary {
  const done = passes.filter((p): p is FindMaxPass => p !== null);
  const both = done.flatMap((p) =>
    p.bullmq === null ? [] : [{ ours: p.chronofence, theirs: p.bullmq }],
  );
  return {
    passes: passes.length,
    failed_passes: passes.length - done.length,
    chronofence_max_per_s: medianOrNull(done.map((p) => p.chronofence.max_per_s ?? 0)),
    bullmq_max_per_s: medianOrNull(both.map((p) => p.theirs.max_per_s ?? 0)),
    at_least_bullmq: both.map((p) => (p.ours.max_per_s ?? 0) >= (p.theirs.max_per_s ?? 0)),
  };
}

const maxText = ({ max_per_s }: { max_per_s: number | null }): string =>
  max_per_s === null ? "below --from" : `${max_per_s}/s`;

export async function repeatFindMax(count: number, argv: readonly string[], json: boolean) {
  const { each, log, printJson } = await repeat<FindMaxPass>(
    count,
    argv,
    json,
    "pass",
    (r) =>
      `Chronofence ${maxText(r.chronofence)}, BullMQ ${r.bullmq === null ? "not run" : maxText(r.bullmq)}`,
  );
  const summary = summarisePasses(each.map((p) => p.report));
  const bullmq = summary.bullmq_max_per_s === null ? "not run" : `${summary.bullmq_max_per_s}/s`;
  log(
    `medians of ${count} passes (${summary.failed_passes} without a report): Chronofence ` +
      `${summary.chronofence_max_per_s}/s, BullMQ ${bullmq}; ` +
      `per pass, Chronofence's at least BullMQ's: ${JSON.stringify(summary.at_least_bullmq)}`,
  );
  printJson("e2e-find-max-passes", summary);
}
