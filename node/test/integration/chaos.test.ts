/**
 * The short chaos run inside `npm test` (issue 15): the harness
 * (bench/chaos/chaos.ts, from the built tree) as a child process, a fixed
 * seed, its own Postgres, Redis and Kafka on ports of its own (it never
 * touches the shared services), every fault kind of the default list. The
 * suite fails on any invariant violation, and also when the run did too
 * little to mean anything: fewer acknowledged tasks or injected faults than
 * the floors below, which are derived from the offered load and the seed's
 * fault plan with a wide margin for a loaded machine.
 *
 * The run takes about two and a half minutes here: 90 s of workload, the
 * services' start (Kafka's JVM is the slowest), the quiescence and the
 * checker. Its report stays under .cache/chaos-results/ for a failure's
 * post-mortem.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { RULES } from "../../../bench/chaos/checker.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const harness = path.join(root, "dist/bench/chaos/chaos.js");

const SEED = 20_261_201;
const MINUTES = 1.5;
const RATE_PER_S = 40;
/** A quarter of the offered tasks: the API is down or cut off for part of the run, and the machine loaded. */
const MIN_ACKED = Math.floor(MINUTES * 60 * RATE_PER_S * 0.25);
/** The plan holds a fault every few seconds after a 10 s warm-up; a run injecting fewer did not test much. */
const MIN_FAULTS = 5;
const MIN_FAULT_KINDS = 3;
/** Workload + start + quiescence (at most QUIESCE_S) + collection, with room for a loaded machine. */
const QUIESCE_S = 120;
const TIMEOUT_MS = 10 * 60_000;

interface RunOutcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runHarness(): Promise<RunOutcome> {
  const args = [
    harness,
    ...["--minutes", String(MINUTES), "--seed", String(SEED), "--rate", String(RATE_PER_S)],
    ...["--quiesce-s", String(QUIESCE_S), "--json"],
  ];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      {
        cwd: root,
        maxBuffer: 64 * 1024 * 1024,
        timeout: TIMEOUT_MS - 30_000,
        killSignal: "SIGTERM",
      },
      (error, stdout, stderr) => {
        const code = error ? ((error as { code?: number }).code ?? null) : 0;
        resolve({ code: typeof code === "number" ? code : null, stdout, stderr });
      },
    );
  });
}

function lastJsonLine(run: RunOutcome, stderrTail: string): Record<string, unknown> {
  const lines = run.stdout.trim().split("\n");
  const last = lines[lines.length - 1] ?? "";
  try {
    return JSON.parse(last) as Record<string, unknown>;
  } catch {
    throw new Error(
      `the harness's last stdout line is not JSON (exit ${run.code}): ${last.slice(0, 500)}\nits stderr ends:\n${stderrTail}`,
    );
  }
}

describe("chaos run (fixed seed, every default fault kind)", () => {
  it(
    "keeps every invariant under faults, having acknowledged tasks and injected faults",
    async () => {
      expect(existsSync(harness), `${harness} is missing: run npm run build`).toBe(true);
      const run = await runHarness();
      const tail = run.stderr.split("\n").slice(-40).join("\n");
      expect(run.code, `the harness failed (exit ${run.code}); its stderr ends:\n${tail}`).not.toBe(
        2,
      );
      const report = lastJsonLine(run, tail);
      const invariants = report.invariants as Record<
        string,
        { ok: boolean; violations: number; counterexamples: string[] }
      >;
      const broken = Object.entries(invariants)
        .filter(([, v]) => !v.ok)
        .map(([name, v]) => `${name}: ${v.violations}\n  ${v.counterexamples.join("\n  ")}`);
      expect(broken, "invariants violated").toEqual([]);
      expect(report.violations).toBe(0);
      expect(run.code).toBe(0);
      expect(Object.keys(invariants).sort()).toEqual(RULES.map(([rule]) => rule).sort());
      expect(report.acked as number).toBeGreaterThanOrEqual(MIN_ACKED);
      const faults = report.faults as Record<string, number>;
      const injected = Object.values(faults).reduce((a, b) => a + b, 0);
      expect(injected, JSON.stringify(faults)).toBeGreaterThanOrEqual(MIN_FAULTS);
      expect(Object.keys(faults).filter((k) => faults[k]! > 0).length).toBeGreaterThanOrEqual(
        MIN_FAULT_KINDS,
      );
      expect(report.quiesced).toBe(true);
    },
    TIMEOUT_MS,
  );
});
