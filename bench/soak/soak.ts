/**
 * `npm run soak -- --minutes M [--rate N] [--sample-s S] [--seed S] [--out DIR] [--plots DIR] [--json]`
 *
 * A steady mixed load (load.ts) on the chaos topology (two APIs, three
 * dispatch nodes, three workers: bench/chaos/topology.ts) and on services of
 * its own (bench/chaos/services.ts: it never touches the shared Postgres,
 * Redis or Kafka), with no faults, for `minutes`; every `sample-s` seconds
 * the sampler (sampler.ts) records each process's RSS, heap and event-loop
 * delay, Postgres connections and dead tuples, Redis memory, consumer lag,
 * outbox depth, lease churn, retries, dead letters, lateness and backlog.
 * At the end every series gets a growth verdict (growth.ts, report.ts), and
 * the run writes JSON (series and verdicts), Markdown and one SVG per metric.
 * Exit code 1 when any series grows, 2 when the run itself failed.
 *
 *   --minutes M    duration of the load (default 60)
 *   --rate N       one-shot tasks per second offered (default 500), plus one DAG per second and the crons
 *   --sample-s S   sampling interval (default 60; a short run wants a few seconds)
 *   --seed S       the load's random choices (default 1)
 *   --out DIR      JSON and Markdown (default .cache/soak-results)
 *   --plots DIR    the SVGs (default: <out>/soak-<start>-plots)
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { benchArgs } from "../args.js";
import { onCleanup, undoAll, undoOnSignals } from "../chaos/cleanup.js";
import { Random } from "../chaos/random.js";
import { startTopology } from "../chaos/topology.js";
import { positive, root, sleepMs } from "../support.js";
import { SoakLoad } from "./load.js";
import { judgeAll, plots, renderMarkdown } from "./report.js";
import { SoakSampler } from "./sampler.js";

const { values: args } = benchArgs({
  options: {
    minutes: { type: "string", default: "60" },
    rate: { type: "string", default: "500" },
    "sample-s": { type: "string", default: "60" },
    seed: { type: "string", default: "1" },
    out: { type: "string", default: path.join(root, ".cache", "soak-results") },
    plots: { type: "string" },
    json: { type: "boolean", default: false },
  },
  allowPositionals: false,
});

const loadAverage = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join("/");

async function main(): Promise<number> {
  undoOnSignals();
  const minutes = positive("minutes", args.minutes);
  const ratePerS = positive("rate", args.rate);
  const sampleS = positive("sample-s", args["sample-s"]);
  const seed = Number(args.seed);
  if (!Number.isInteger(seed) || seed < 0) throw new Error("--seed must be a non-negative integer");
  const log = (line: string) => process.stderr.write(`soak: ${line}\n`);
  const dir = await mkdtemp(path.join(os.tmpdir(), "cf-soak-"));
  onCleanup(`remove ${dir}`, () => rm(dir, { recursive: true, force: true }));
  try {
    log(`starting Postgres, Redis, Kafka and 8 Chronofence processes under ${dir}`);
    // No execution records (handlers.mjs writes none without CHAOS_EXEC_DIR): an hour at
    // this rate would fill the disk with lines nobody checks.
    const topology = await startTopology({ dir, observe: false, env: { CHAOS_EXEC_DIR: "" } });
    const random = new Random(seed);
    const load = new SoakLoad(
      topology.apiUrls,
      topology.tenants.map((t) => t.apiKey),
      random.fork("soak"),
      ratePerS,
    );
    await load.createSchedules();
    const startedAtMs = Date.now();
    const sampler = new SoakSampler(topology, startedAtMs);
    const loadAverages: string[] = [];
    const endMs = startedAtMs + Math.round(minutes * 60_000);
    log(`load for ${minutes} min at ${ratePerS} tasks/s, sampling every ${sampleS} s`);
    const sampling = (async () => {
      for (let next = startedAtMs + sampleS * 1000; next <= endMs + 1; next += sampleS * 1000) {
        // A sample slower than the interval (it took minutes at load 65) skips the slots it
        // overran, so the sampling ends with the load instead of trailing it by as long again.
        if (Date.now() > next + sampleS * 1000) continue;
        await sleepMs(Math.max(0, next - Date.now()));
        await sampler.sample();
        loadAverages.push(loadAverage());
        log(
          `sample ${loadAverages.length} (load ${loadAverages.at(-1)}): accepted ${load.counts.tasksAccepted}, not sent ${load.counts.tasksNotSent}`,
        );
      }
    })();
    await load.run(endMs);
    await sampling;

    const verdicts = judgeAll(sampler.series);
    const startedAt = new Date(startedAtMs).toISOString();
    const stamp = startedAt.replace(/[:.]/g, "");
    const outDir = path.resolve(args.out!);
    const plotDir = path.resolve(args.plots ?? path.join(outDir, `soak-${stamp}-plots`));
    await mkdir(outDir, { recursive: true });
    await mkdir(plotDir, { recursive: true });
    for (const [name, svg] of plots(sampler.series, verdicts, startedAtMs))
      await writeFile(path.join(plotDir, name), svg);
    const facts = {
      minutes,
      ratePerS,
      sampleS,
      startedAt,
      load: { ...load.counts },
      loadAverage: loadAverages,
      verdicts,
    };
    const series = Object.fromEntries(
      [...sampler.series].map(([metric, byLabel]) => [metric, Object.fromEntries(byLabel)]),
    );
    const base = path.join(outDir, `soak-${stamp}`);
    await writeFile(`${base}.json`, `${JSON.stringify({ ...facts, series }, null, 1)}\n`);
    await writeFile(`${base}.md`, renderMarkdown(facts));
    log(`report: ${base}.md (JSON ${base}.json, plots ${plotDir})`);
    process.stdout.write(
      args.json
        ? `${JSON.stringify({ grows: verdicts.grows, too_short: verdicts.tooShort, verdicts: verdicts.series, load: load.counts })}\n`
        : renderMarkdown(facts),
    );
    return verdicts.grows > 0 ? 1 : 0;
  } finally {
    await undoAll();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`soak: ${(error as Error).stack ?? error}\n`);
    process.exit(2);
  },
);
