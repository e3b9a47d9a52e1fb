/**
 * `node dist/bench/chaos/summarize.js DIR`: one Markdown table of every chaos
 * report in DIR (the `chaos-seed*.json` files a run writes next to its
 * Markdown) — seed, tasks acknowledged, faults by kind, violations by rule,
 * whether it quiesced — and each invariant's verdict over all the runs. What
 * docs/evidence.md's list of runs is made of.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import type { ChaosReport } from "./report.js";

export function summarize(reports: readonly ChaosReport[]): string {
  const sorted = [...reports].sort((a, b) => a.started_at.localeCompare(b.started_at));
  const rules = [...new Set(sorted.flatMap((r) => Object.keys(r.invariants)))].sort();
  const lines = [
    "| seed | started | rate/s | acked | faults (by kind) | violations | quiesced |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...sorted.map((r) => {
      const faults = Object.entries(r.faults)
        .map(([k, n]) => `${k} ${n}`)
        .join(", ");
      const broken = Object.entries(r.invariants)
        .filter(([, v]) => !v.ok)
        .map(([k, v]) => `${k} ${v.violations}`)
        .join(", ");
      const total = Object.values(r.faults).reduce((a, b) => a + b, 0);
      return `| ${r.seed} | ${r.started_at.slice(11, 19)} | ${r.rate_per_s} | ${r.acked} | ${total}: ${faults} | ${r.violations === 0 ? "0" : `**${r.violations}** (${broken})`} | ${r.quiesced ? "yes" : "**no**"} |`;
    }),
    "",
    "| invariant | runs holding it | runs violating it |",
    "| --- | --- | --- |",
    ...rules.map((rule) => {
      const held = sorted.filter((r) => r.invariants[rule]?.ok).map((r) => r.seed);
      const broken = sorted.filter((r) => r.invariants[rule] && !r.invariants[rule].ok);
      return `| ${rule} | ${held.length} | ${broken.length === 0 ? "0" : `${broken.length} (seeds ${broken.map((r) => r.seed).join(", ")})`} |`;
    }),
    "",
  ];
  return lines.join("\n");
}

async function main(dir: string): Promise<void> {
  const names = (await readdir(dir)).filter((n) => /^chaos-seed\d+-[^.]+\.json$/.test(n));
  const reports = await Promise.all(
    names.map(async (n) => JSON.parse(await readFile(path.join(dir, n), "utf8")) as ChaosReport),
  );
  process.stdout.write(summarize(reports));
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  const dir = process.argv[2];
  if (!dir) {
    process.stderr.write("usage: node dist/bench/chaos/summarize.js DIR\n");
    process.exit(2);
  }
  main(dir).catch((error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? error}\n`);
    process.exit(2);
  });
}
