/**
 * `npm run bench:e2e -- --find-max [--from R0] [--seconds S] [--json] [--direct | --one-process] [--no-peer]`:
 * each system's highest sustained rate. For Chronofence and then BullMQ,
 * offers R0, then a quarter more each step (rounded to 100/s), one
 * `bench:e2e` run per step in a child process of its own (so one step's
 * processes, keys and topics are gone before the next), until a step fails:
 * completions over the plateau under 98 % of the offered rate, or
 * worker-start p99 over 1 s. A system's maximum is its last passing rate
 * (null when the first step fails); every step's figures are in the report.
 * --direct (or --one-process) steps Chronofence in that mode (bench/e2e.ts); --no-peer skips BullMQ.
 */
import os from "node:os";
import { e2eInChild } from "./e2e-child.js";
import { round } from "./support.js";

export const FIND_MAX = {
  /** A plateau below this share of the offered rate fails the step. */
  minPlateauShare: 0.98,
  /** A worker-start p99 above this fails the step. */
  maxP99Ms: 1000,
  growth: 1.25,
  /** No step beyond this: a rate the machine cannot even offer says nothing. */
  maxRatePerS: 50_000,
} as const;

type System = "chronofence" | "bullmq";

interface StepFigures {
  completed_per_s: number | null;
  worker_start: { p50_ms: number; p99_ms: number; max_ms: number } | null;
}

export interface Step {
  rate: number;
  passed: boolean;
  why: string | null;
  completed_per_s: number | null;
  worker_start_p99_ms: number | null;
  load_avg_before: number[];
}

/** Why a step fails, or null when it passes. */
export function stepVerdict(rate: number, figures: StepFigures | null): string | null {
  if (figures === null || figures.worker_start === null) return "no result";
  const plateau = figures.completed_per_s ?? 0;
  if (plateau < rate * FIND_MAX.minPlateauShare)
    return `plateau ${plateau}/s < ${FIND_MAX.minPlateauShare * 100} % of ${rate}/s`;
  if (figures.worker_start.p99_ms > FIND_MAX.maxP99Ms)
    return `worker-start p99 ${figures.worker_start.p99_ms} ms > ${FIND_MAX.maxP99Ms} ms`;
  return null;
}

export const nextRate = (rate: number): number =>
  Math.max(rate + 100, Math.round((rate * FIND_MAX.growth) / 100) * 100);

export interface FindMaxOptions {
  direct: boolean;
  oneProcess: boolean;
  peer: boolean;
}

async function runStep(
  system: System,
  rate: number,
  seconds: number,
  options: FindMaxOptions,
): Promise<StepFigures | null> {
  const which = system === "chronofence" ? "--no-peer" : "--peer-only";
  const argv = ["--rate", String(rate), "--seconds", String(seconds), "--json", which];
  if (system === "chronofence" && options.oneProcess) argv.push("--one-process");
  else if (system === "chronofence" && options.direct) argv.push("--direct");
  const report = (await e2eInChild(argv, `find-max: ${system} at ${rate}/s`)) as
    | (StepFigures & { peer: StepFigures | null })
    | null;
  return system === "chronofence" ? report : (report?.peer ?? null);
}

async function findMaxOf(
  system: System,
  startRate: number,
  seconds: number,
  options: FindMaxOptions,
  log: (l: string) => void,
) {
  const steps: Step[] = [];
  for (let rate = startRate; rate <= FIND_MAX.maxRatePerS; rate = nextRate(rate)) {
    const load_avg_before = os.loadavg().map(round);
    const figures = await runStep(system, rate, seconds, options);
    const why = stepVerdict(rate, figures);
    steps.push({
      rate,
      passed: why === null,
      why,
      completed_per_s: figures?.completed_per_s ?? null,
      worker_start_p99_ms: figures?.worker_start?.p99_ms ?? null,
      load_avg_before,
    });
    log(
      `${system} ${rate}/s: ${why ?? "passes"} (load average before ${load_avg_before.join(" ")})`,
    );
    if (why !== null) break;
  }
  const passing = steps.filter((s) => s.passed);
  return { max_per_s: passing.length > 0 ? passing[passing.length - 1]!.rate : null, steps };
}

export async function findMax(
  startRate: number,
  seconds: number,
  json: boolean,
  options: FindMaxOptions,
): Promise<void> {
  const log = (line: string) => {
    if (!json) console.log(line);
  };
  const chronofence = await findMaxOf("chronofence", startRate, seconds, options, log);
  const bullmq = options.peer ? await findMaxOf("bullmq", startRate, seconds, options, log) : null;
  log(
    `maximum sustained rate: Chronofence ${chronofence.max_per_s}/s, BullMQ ${bullmq?.max_per_s ?? "not run"}/s`,
  );
  if (json) {
    console.log(
      JSON.stringify({
        bench: "e2e-find-max",
        seconds,
        criteria: FIND_MAX,
        cores: os.cpus().length,
        direct: options.direct,
        one_process: options.oneProcess,
        chronofence,
        bullmq,
      }),
    );
  }
}
