/** Bundles a support child (api-child.ts, dispatch-child.ts: TypeScript) into plain ESM once, and runs it as a real process. */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "../../../..");

export const bundleApiChild = () => bundleChild("api-child");

/** Writes the bundle inside the repo (under .cache/, git-ignored) so node_modules resolve. */
export async function bundleChild(
  name: "api-child" | "dispatch-child",
): Promise<{ file: string; cleanup: () => Promise<void> }> {
  const { build } = await import("rolldown");
  const dir = path.join(repoRoot, ".cache", `${name}-${process.pid}-${Date.now()}`);
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `${name}.mjs`);
  await build({
    input: path.join(here, `${name}.ts`),
    platform: "node",
    external: (id) => !id.startsWith(".") && !path.isAbsolute(id),
    // One file: the roles load some adapters on demand (a dynamic import), which must stay in it.
    output: { file, format: "esm", codeSplitting: false },
    logLevel: "silent",
  });
  return { file, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export interface Child {
  process: ChildProcess;
  port: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves when the child has printed a line matching `pattern` (now or later). */
  printed(pattern: RegExp): Promise<void>;
}

const live = new Set<ChildProcess>();

/** Kills every child still running (afterAll: a failed test must not leave servers behind). */
export function killChildren(): void {
  for (const child of live) child.kill("SIGKILL");
}

export async function startChild(file: string, env: Record<string, string>): Promise<Child> {
  const child = spawn(process.execPath, [file], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  live.add(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    }),
  );
  let out = "";
  const watchers = new Set<() => void>();
  child.stdout!.on("data", (chunk: Buffer) => {
    out += chunk.toString();
    for (const check of watchers) check();
  });
  const printed = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!out.split("\n").some((line) => pattern.test(line))) return;
        watchers.delete(check);
        resolve();
      };
      watchers.add(check);
      check();
      exited.then(({ code, signal }) =>
        reject(new Error(`api child exited (${code ?? signal}) before printing ${pattern}`)),
      );
    });
  await printed(/^LISTENING \d+$/);
  const port = Number(/LISTENING (\d+)/.exec(out)![1]);
  return { process: child, port, exited, printed };
}
