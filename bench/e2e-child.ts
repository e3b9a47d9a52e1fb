/**
 * One `bench:e2e` run in a child process of its own (so its processes, keys
 * and topics are gone before the next), for the benches that run it again
 * and again (--find-max, --runs): its report is the last line it prints
 * with --json, or null, with why on stderr, when it gave none.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

const e2eScript = fileURLToPath(new URL("./e2e.js", import.meta.url));

export function e2eInChild(args: readonly string[], what: string): Promise<unknown | null> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [e2eScript, ...args],
      { maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const last = stdout.trim().split("\n").pop() ?? "";
        try {
          resolve(JSON.parse(last));
        } catch {
          process.stderr.write(`${what} gave no report: ${error?.message ?? ""}\n${stderr}`);
          resolve(null);
        }
      },
    );
  });
}
