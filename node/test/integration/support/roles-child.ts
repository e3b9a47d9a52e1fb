/**
 * `chronofence run --roles ...` (the built CLI in dist/) as a real child
 * process, for tests that kill or pause it; or, with `script`, a bundled
 * support child that prints the same `ready` line (support/dispatch-child.ts).
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Config } from "../../../src/config/config.js";
import { TEST_REDIS_URL } from "./services.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const CLI = path.resolve(here, "../../../../bin/chronofence.js");

export interface RolesChild {
  process: ChildProcess;
  nodeId: string;
  metricsPort: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sum of a metric's series (those whose labels contain `labels`, if given). */
  metric(name: string, labels?: string): Promise<number>;
  /** The first stdout line matching `pattern`, once printed (now or later). */
  printed(pattern: RegExp): Promise<RegExpExecArray>;
  /** Every stdout line printed so far that matches `pattern`. */
  lines(pattern: RegExp): RegExpExecArray[];
}

/**
 * What a roles child needs to share a test's database, Redis prefix, topics
 * and partitions, and to stay quiet on loopback (its node id, when given).
 */
export function fixtureEnv(
  fixture: { db: { url: string }; config: Config },
  nodeId?: string,
): Record<string, string> {
  return {
    DATABASE_URL: fixture.db.url,
    REDIS_URL: TEST_REDIS_URL,
    CF_REDIS_PREFIX: fixture.config.redisKeyPrefix,
    CF_TOPIC_PREFIX: fixture.config.topicPrefix,
    CF_KAFKA_PARTITIONS: String(fixture.config.kafkaPartitions),
    HOST: "127.0.0.1",
    LOG_LEVEL: process.env.CF_TEST_LOG_LEVEL ?? "silent",
    ...(nodeId !== undefined && { CF_NODE_ID: nodeId }),
  };
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
  options: { script?: string } = {},
): Promise<RolesChild> {
  const args = options.script ? [options.script] : [CLI, "run", "--roles", roles];
  const child = spawnCliChild(args, env);
  const ready = await child.printed(/^ready (\S+) roles=\S+ metrics_port=(\d+)/);
  const metricsPort = Number(ready[2]);
  return {
    ...child,
    nodeId: ready[1]!,
    metricsPort,
    metric: (name, labels) => scrape(metricsPort, name, labels),
  };
}

export type CliChild = Pick<RolesChild, "process" | "exited" | "printed" | "lines"> & {
  /** Every stderr line so far (the JSON logs), when `logs` was asked for. */
  logs(): string[];
};

/**
 * `node <args>` (by default the built CLI's arguments, `cliArgs`) as a child whose stdout
 * lines can be awaited; with `logs`, its stderr is kept too (else shown only with
 * CF_TEST_LOG_LEVEL). Killed by killRolesChildren.
 */
export function spawnCliChild(
  args: string[],
  env: Record<string, string>,
  options: { logs?: boolean } = {},
): CliChild {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: [
      "ignore",
      "pipe",
      options.logs ? "pipe" : process.env.CF_TEST_LOG_LEVEL ? "inherit" : "ignore",
    ],
  });
  live.add(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    }),
  );
  const output = lineCollector(child.stdout!);
  const logs = options.logs ? lineCollector(child.stderr!) : null;
  const lines = (pattern: RegExp) =>
    output.lines.map((line) => pattern.exec(line)).filter((m): m is RegExpExecArray => m !== null);
  const printed = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const [match] = lines(pattern);
        if (!match) return;
        output.watchers.delete(check);
        resolve(match);
      };
      output.watchers.add(check);
      check();
      exited.then(({ code, signal }) =>
        reject(
          new Error(`${args.join(" ")} exited (${code ?? signal}) before printing ${pattern}`),
        ),
      );
    });
  return { process: child, exited, printed, lines, logs: () => [...(logs?.lines ?? [])] };
}

/** The built CLI's arguments for `node`: `cliArgs("watchdog")`. */
export const cliArgs = (...command: string[]) => [CLI, ...command];

function lineCollector(stream: NodeJS.ReadableStream) {
  const collected = { lines: [] as string[], watchers: new Set<() => void>() };
  let partial = "";
  stream.on("data", (chunk: Buffer) => {
    const text = partial + chunk.toString();
    const complete = text.split("\n");
    partial = complete.pop()!;
    collected.lines.push(...complete);
    for (const check of collected.watchers) check();
  });
  return collected;
}

/** Sum of every series of a metric on a /metrics port (those whose labels contain `labels`). */
export async function scrape(port: number, name: string, labels = ""): Promise<number> {
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
