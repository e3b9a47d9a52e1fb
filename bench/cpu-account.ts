/**
 * Where the machine's CPU went during a benchmark phase, from /proc (Linux):
 * the API process, this process (the load generator), Postgres backends,
 * Redis, and everything else (other work on the machine skews the numbers,
 * so it is reported rather than hidden).
 */
import { readdir, readFile } from "node:fs/promises";
import os from "node:os";

const TICKS_PER_S = 100; // USER_HZ on Linux

type Groups = Record<string, number>;

async function cpuTicks(pid: string): Promise<{ comm: string; ticks: number } | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    const close = stat.lastIndexOf(")");
    const comm = stat.slice(stat.indexOf("(") + 1, close);
    const fields = stat.slice(close + 2).split(" ");
    return { comm, ticks: Number(fields[11]) + Number(fields[12]) }; // utime + stime
  } catch {
    return null; // exited meanwhile
  }
}

async function totalTicks(): Promise<number> {
  const line = (await readFile("/proc/stat", "utf8")).split("\n")[0]!;
  return line
    .split(/\s+/)
    .slice(1, 9)
    .map(Number)
    .reduce((a, b) => a + b, 0);
}

export async function snapshot(apiPid: number): Promise<{ groups: Groups; total: number }> {
  const groups: Groups = { api: 0, "load generator": 0, postgres: 0, redis: 0, other: 0 };
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const proc = await cpuTicks(pid);
    if (!proc) continue;
    const group =
      Number(pid) === apiPid
        ? "api"
        : Number(pid) === process.pid
          ? "load generator"
          : proc.comm.startsWith("postgres")
            ? "postgres"
            : proc.comm.startsWith("redis")
              ? "redis"
              : "other";
    groups[group]! += proc.ticks;
  }
  return { groups, total: await totalTicks() };
}

/** Cores used by each group between two snapshots, plus idle cores. */
export function coresUsed(
  before: Awaited<ReturnType<typeof snapshot>>,
  after: Awaited<ReturnType<typeof snapshot>>,
  seconds: number,
): Record<string, number> {
  const result: Record<string, number> = {};
  let busy = 0;
  for (const [group, ticks] of Object.entries(after.groups)) {
    const cores = Math.max(0, ticks - (before.groups[group] ?? 0)) / TICKS_PER_S / seconds;
    result[group] = Math.round(cores * 100) / 100;
    busy += cores;
  }
  const machineCores = os.cpus().length;
  result.idle = Math.round(Math.max(0, machineCores - busy) * 100) / 100;
  return result;
}
