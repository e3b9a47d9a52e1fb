/**
 * `chronofence dev` (the built CLI in dist/) as a real child process in a
 * directory of its own, with none of the service variables set: the
 * embedded default, as a new user's `npm start` runs it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const CLI = path.resolve(here, "../../../../bin/chronofence.js");

export interface DevChild {
  process: ChildProcess;
  /** The `ready <url>` line's URL. */
  apiUrl: string;
  /** Everything printed on stdout so far. */
  stdout(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const live = new Set<ChildProcess>();

export function killDevChildren(): void {
  for (const child of live) child.kill("SIGKILL");
}

/** The environment without DATABASE_URL, REDIS_URL and KAFKA_BROKERS (the embedded default). */
export function embeddedEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of ["DATABASE_URL", "REDIS_URL", "KAFKA_BROKERS"]) delete env[name];
  return env;
}

/** Spawns `chronofence dev args` in `cwd`; resolves once it printed `ready`, or with its exit. */
export function spawnDev(
  cwd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): { child: ChildProcess; ready: Promise<DevChild>; output: () => { out: string; err: string } } {
  const child = spawn(process.execPath, [CLI, "dev", ...args], {
    cwd,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  live.add(child);
  let out = "";
  let err = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    err += chunk.toString();
    if (process.env.CF_TEST_LOG_LEVEL) process.stderr.write(chunk);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    }),
  );
  const ready = new Promise<DevChild>((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = /^ready (\S+)$/m.exec(out);
      if (match) resolve({ process: child, apiUrl: match[1]!, stdout: () => out, exited });
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`chronofence dev exited (${code ?? signal}) before ready: ${err}`)),
    );
  });
  return { child, ready, output: () => ({ out, err }) };
}
