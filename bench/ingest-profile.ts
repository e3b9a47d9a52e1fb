/** Summarises V8 .cpuprofile files: where the API's CPU time went, by function and by area. */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const AREAS: Array<[string, RegExp]> = [
  ["idle (waiting for I/O)", /^\(idle\)$/],
  ["garbage collection", /^\(garbage collector\)$/],
  ["pg driver", /node_modules\/(pg|pg-protocol|pg-pool|pg-types)\//],
  ["ioredis", /node_modules\/(ioredis|redis-parser|denque)\//],
  ["zod", /node_modules\/zod\//],
  ["prom-client", /node_modules\/prom-client\//],
  ["uuidv7", /node_modules\/uuidv7\//],
  ["chronofence", /\/dist\/node\/src\//],
  ["node internals", /^node:/],
];

function areaOf(node: ProfileNode): string {
  const { functionName, url } = node.callFrame;
  for (const [area, re] of AREAS) if (re.test(url) || re.test(functionName)) return area;
  if (url === "") return `native/builtin (${functionName || "anonymous"})`;
  return "other JS";
}

export async function summariseProfiles(dir: string): Promise<string> {
  const files = (await readdir(dir)).filter((f) => f.endsWith(".cpuprofile"));
  const lines: string[] = [];
  for (const file of files) {
    const profile = JSON.parse(await readFile(path.join(dir, file), "utf8")) as Profile;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const selfUs = new Map<number, number>();
    profile.samples.forEach((id, i) => {
      selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
    });
    const totalUs = profile.endTime - profile.startTime;
    const areas = new Map<string, number>();
    const functions = new Map<string, number>();
    for (const [id, us] of selfUs) {
      const node = byId.get(id)!;
      areas.set(areaOf(node), (areas.get(areaOf(node)) ?? 0) + us);
      const { functionName, url, lineNumber } = node.callFrame;
      const name = `${functionName || "(anonymous)"} ${url.replace(/^.*node_modules\//, "").replace(/^.*\/dist\//, "")}:${lineNumber + 1}`;
      functions.set(name, (functions.get(name) ?? 0) + us);
    }
    const pct = (us: number) => `${((100 * us) / totalUs).toFixed(1).padStart(5)}%`;
    lines.push(`profile ${file} (${(totalUs / 1e6).toFixed(1)} s of the API process):`);
    for (const [area, us] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, 14))
      lines.push(`  ${pct(us)}  ${area}`);
    lines.push("  hottest functions (self time):");
    for (const [name, us] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, 20))
      lines.push(`  ${pct(us)}  ${name}`);
  }
  return lines.join("\n");
}
