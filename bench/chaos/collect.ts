/**
 * After a chaos run has quiesced and its processes stopped: the handlers'
 * records (handlers.mjs) read back into executions, and the run's history
 * assembled for the checker (history.ts) from the workload's record, the
 * database (observe.ts) and the extra reconciler pass (reconcile-once.ts).
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import type { Execution, History } from "./history.js";
import { readTasks, readTransitions } from "./observe.js";
import { reconcileOnce } from "./reconcile-once.js";
import { REDIS_PREFIX, type Topology } from "./topology.js";
import type { Workload } from "./workload.js";

interface StartLine {
  e: "start";
  task: string;
  token: string;
  attempt: number;
  node: string;
  at: number;
}
interface EndLine {
  e: "end";
  task: string;
  token: string;
  at: number;
  outcome: "ok" | "threw" | "aborted";
}

/** Every run the handlers recorded, an end matched to its start by task, token and node. */
export async function readExecutions(dir: string): Promise<Execution[]> {
  const executions: Execution[] = [];
  for (const file of (await readdir(dir)).filter((f) => f.endsWith(".jsonl")).sort()) {
    const open = new Map<string, Execution>();
    const text = await readFile(path.join(dir, file), "utf8");
    for (const raw of text.split("\n")) {
      if (raw.trim() === "") continue;
      let line: StartLine | EndLine;
      try {
        line = JSON.parse(raw);
      } catch {
        continue; // a line cut short by a kill -9
      }
      const key = `${line.task}/${line.token}`;
      if (line.e === "start") {
        const run: Execution = {
          taskId: line.task,
          fencingToken: line.token,
          attempt: line.attempt,
          node: line.node,
          startedAtMs: line.at,
          finishedAtMs: null,
          outcome: null,
        };
        executions.push(run);
        open.set(key, run);
      } else {
        const run = open.get(key);
        if (run) {
          run.finishedAtMs = line.at;
          run.outcome = line.outcome;
          open.delete(key);
        }
      }
    }
  }
  return executions;
}

/** Snapshot, one more reconciler pass, snapshot again; then everything else the checker reads. */
export async function collectHistory(
  topology: Topology,
  workload: Workload,
): Promise<{ history: History; reconcile: unknown }> {
  const before = await topology.withDb(readTasks);
  const reconcile = await reconcileOnce(topology.databaseUrl, topology.redis.url, REDIS_PREFIX);
  const after = await topology.withDb(readTasks);
  const transitions = await topology.withDb(readTransitions);
  const record = workload.record();
  const history: History = {
    submitted: record.submitted,
    requiredOccurrences: workload.requiredOccurrences(),
    cancels: record.cancels,
    executions: await readExecutions(topology.execDir),
    workflowNodes: record.workflowNodes,
    transitions,
    tasks: before,
    tasksAfterReconcile: after,
  };
  return { history, reconcile };
}
