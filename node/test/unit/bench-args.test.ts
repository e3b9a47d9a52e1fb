import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";

const wheelBench = new URL("../../../dist/bench/wheel.js", import.meta.url);

/** The built bench:wheel, whose flags are parsed before it measures anything. */
function runWheelBench(...flags: string[]) {
  expect(existsSync(wheelBench), "run `npm run build` first").toBe(true);
  return spawnSync(process.execPath, [wheelBench.pathname, ...flags], { encoding: "utf8" });
}

describe("a bench's command line (bench/args.ts)", () => {
  it("answers a flag it does not know with the flags it takes, not a stack trace", () => {
    const run = runWheelBench("--no-such-flag");
    expect(run.status).toBe(2);
    expect(run.stderr).toContain("Unknown option '--no-such-flag'");
    expect(run.stderr).toContain("  --json");
    expect(run.stderr).not.toContain("    at ");
  });

  it("lists its flags and their defaults for --help, and measures nothing", () => {
    const run = runWheelBench("--help");
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^flags:\n/);
    expect(run.stdout).toMatch(/--timers <value> \(default \d+\)/);
    expect(run.stdout).not.toContain("ratios");
  });
});
