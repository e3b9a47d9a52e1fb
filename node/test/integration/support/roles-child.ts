/** `chronofence run --roles ...` (the built CLI in dist/) as a real child process, for tests that kill or pause it. */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const CLI = path.resolve(here, "../../../../bin/chronofence.js");

export interface RolesChild {
  process: ChildProcess;
  nodeId: string;
  metricsPort: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sum of a metric's series (those whose labels contain `labels`, if given). */
  metric(name: string, labels?: string): Promise<number>;
}

const live = new Set<ChildProcess>();

/** Kills every child still running, even stopped ones (afterAll). */
export function killRolesChildren(): void {
  for (const child of live) {
    child.kill("SIGCONT");
    child.kill("SIGKILL");
  }
}

export async function startRolesChild(
  roles: string,
  env: Record<string, string>,
): Promise<RolesChild> {
  const child = spawn(process.execPath, [CLI, "run", "--roles", roles], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", process.env.CF_TEST_LOG_LEVEL ? "inherit" : "ignore"],
  });
  live.add(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    }),
  );
  const ready = await new Promise<{ nodeId: string; metricsPort: number }>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = /ready (\S+) roles=\S+ metrics_port=(\d+)/.exec(out);
      if (match) resolve({ nodeId: match[1]!, metricsPort: Number(match[2]) });
    });
    exited.then(({ code, signal }) =>
      reject(new Error(`chronofence run --roles ${roles} exited early (${code ?? signal})`)),
    );
  });
  return {
    process: child,
    ...ready,
    exited,
    metric: (name, labels) => scrape(ready.metricsPort, name, labels),
  };
}

/** Sum of every series of a metric (all label values). */
async function scrape(port: number, name: string, labels = ""): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n")) {
    const series = line.startsWith(`${name}{`) || line.startsWith(`${name} `);
    if (series && line.slice(0, line.lastIndexOf(" ")).includes(labels)) {
      sum += Number(line.slice(line.lastIndexOf(" ") + 1));
    }
  }
  return sum;
}
