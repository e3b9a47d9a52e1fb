/**
 * `npm run chaos -- --minutes M --seed S [--faults list] [--rate N] [--json] [--keep]`
 *
 * A randomized chaos run (run-chaos.ts) on services of its own: progress on
 * stderr, the Markdown report on stdout (or, with --json, the report as the
 * LAST line of stdout: one JSON object with at least `acked`, `faults`,
 * `violations` and `invariants`). Exit code 1 when any invariant is
 * violated, 2 when the run itself failed. `--measure` runs the recovery
 * objectives instead (measure.ts; the same as `npm run chaos:measure`), with
 * `--trials N` (default 5).
 *
 *   --minutes M      workload duration (default 5)
 *   --seed S         decides the fault plan and the workload (default: from the clock, printed)
 *   --faults a,b     fault kinds (nemesis-plan.ts; default all but clock_ahead; "none")
 *   --rate N         tasks per second offered (default 50)
 *   --quiesce-s N    longest wait for every task to finish after the workload (default 180)
 *   --out DIR        where the reports go (default .cache/chaos-results)
 *   --keep           keep the run directory (process logs, handler records)
 *   --set NAME=VALUE environment of every Chronofence process (repeatable), e.g. --set CF_DISPATCH_TIMEOUT_MS=15000
 */
import path from "node:path";
import { benchArgs } from "../args.js";
import { positive, root } from "../support.js";
import { undoOnSignals } from "./cleanup.js";
import { parseFaultKinds } from "./nemesis-plan.js";
import { renderMarkdown } from "./report.js";
import { runChaos } from "./run-chaos.js";

const { values: args } = benchArgs({
  options: {
    minutes: { type: "string", default: "5" },
    seed: { type: "string" },
    faults: { type: "string" },
    rate: { type: "string", default: "50" },
    "quiesce-s": { type: "string", default: "180" },
    out: { type: "string", default: path.join(root, ".cache", "chaos-results") },
    json: { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
    measure: { type: "boolean", default: false },
    trials: { type: "string" },
    set: { type: "string", multiple: true },
  },
  allowPositionals: false,
});

function parseSettings(pairs: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(pair);
    if (!match) throw new Error(`--set ${pair}: expected NAME=VALUE`);
    env[match[1]!] = match[2]!;
  }
  return env;
}

async function main(): Promise<number> {
  undoOnSignals();
  if (args.measure) {
    const { measureMain } = await import("./measure.js");
    return measureMain(args.trials, args.json, path.resolve(args.out));
  }
  const seed = args.seed === undefined ? Date.now() % 1_000_000 : Number(args.seed);
  if (!Number.isInteger(seed) || seed < 0) throw new Error(`--seed must be a non-negative integer`);
  const log = (line: string) => process.stderr.write(`chaos: ${line}\n`);
  log(`seed ${seed}`);
  const { report, files } = await runChaos({
    minutes: positive("minutes", args.minutes),
    seed,
    faults: parseFaultKinds(args.faults),
    ratePerS: positive("rate", args.rate),
    quiesceS: positive("quiesce-s", args["quiesce-s"]),
    outDir: path.resolve(args.out),
    keep: args.keep,
    env: parseSettings(args.set ?? []),
    log,
  });
  log(`report: ${files.markdown} (JSON ${files.json}, history ${files.history})`);
  if (args.json) process.stdout.write(`${JSON.stringify(report)}\n`);
  else process.stdout.write(renderMarkdown(report));
  return report.violations > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`chaos: ${(error as Error).stack ?? error}\n`);
    process.exit(2);
  },
);
