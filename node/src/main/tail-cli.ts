/**
 * `chronofence tail`: a live stream of the tenant's task changes. It polls
 * the change feed (`GET /v1/tasks?order=updated_at&updated_after=`,
 * docs/api.md "The change feed") every `--interval-ms` and prints each
 * change once: `<updated_at>  <id>  <type>  <status>  <attempt>`, or with
 * `--json` one task document per line (NDJSON: a stream has no single
 * document).
 *
 * Each poll asks again from `overlapMs` before the newest change seen, so a
 * change committed late with an earlier updated_at (a slow transaction, a
 * writer's clock a little behind) is still printed; the tracker remembers
 * what it printed within that overlap and prints nothing twice. What the
 * feed cannot show, tail cannot either: a task that changed several times
 * between two polls shows its latest state, and only the tenant's 10,000
 * newest tasks are watched.
 */
import { type Command, Option } from "commander";
import { ChronofenceApiError } from "../client/errors.js";
import type { Task, TaskFilter, TaskStatus } from "../client/types.js";
import {
  apiCommandGroup,
  type CommandContext,
  runApiCommand,
  UsageError,
  wholeNumber,
} from "./cli-common.js";

export const DEFAULT_OVERLAP_MS = 5000;

/** Which changes of a poll are new, and where the next poll starts. */
export class ChangeTracker {
  private newestMs: number;
  /** Printed changes still inside the overlap: id → updated_at ms. */
  private readonly printed = new Map<string, number>();

  constructor(
    startMs: number,
    private readonly overlapMs: number,
  ) {
    this.newestMs = startMs;
  }

  /** The next poll's updated_after, in ms. */
  get afterMs(): number {
    return this.newestMs - this.overlapMs;
  }

  /** The tasks of a poll not printed yet (a task again once it changed again), recorded as printed. */
  fresh(tasks: readonly Task[]): Task[] {
    const out: Task[] = [];
    for (const task of tasks) {
      const updatedMs = Date.parse(task.updated_at);
      const seenMs = this.printed.get(task.id);
      if (seenMs !== undefined && seenMs >= updatedMs) continue;
      if (seenMs === undefined && updatedMs <= this.afterMs) continue;
      this.printed.set(task.id, updatedMs);
      this.newestMs = Math.max(this.newestMs, updatedMs);
      out.push(task);
    }
    for (const [id, ms] of this.printed) if (ms <= this.afterMs) this.printed.delete(id);
    return out;
  }
}

export const changeLine = (t: Task): string =>
  `${t.updated_at}  ${t.id}  ${t.type}  ${t.status.padEnd(9)}  attempt ${t.attempt}/${t.max_attempts}`;

interface TailFlags {
  type?: string;
  status?: string;
  since?: string;
  intervalMs: number;
  count?: number;
}

export function registerTailCommand(program: Command): void {
  const tail = apiCommandGroup(program, "tail", "follow the tenant's task changes, live");
  tail
    .option("--type <type>", "only tasks of this type")
    .addOption(new Option("--status <status>", "only changes into this state"))
    .option("--since <iso>", "start from changes after this instant (default: now)")
    .option("--interval-ms <n>", "poll interval", wholeNumber, 1000)
    .option("--count <n>", "stop after this many changes", wholeNumber)
    .action((flags: TailFlags, command: Command) =>
      runApiCommand(command, (ctx) => follow(ctx, flags)),
    );
}

async function follow(ctx: CommandContext, flags: TailFlags): Promise<void> {
  const startMs = flags.since === undefined ? Date.now() : Date.parse(flags.since);
  if (!Number.isFinite(startMs)) throw new UsageError(`--since: not an instant: ${flags.since}`);
  // Changes at or before the start are not wanted: the overlap only reaches back from later ones.
  const tracker = new ChangeTracker(startMs + DEFAULT_OVERLAP_MS, DEFAULT_OVERLAP_MS);
  let printed = 0;
  let warned = false;
  for (;;) {
    try {
      const filter: TaskFilter = {
        order: "updated_at",
        updatedAfter: new Date(Math.max(0, tracker.afterMs)),
        limit: 1000,
        ...(flags.type !== undefined && { type: flags.type }),
        ...(flags.status !== undefined && { status: flags.status as TaskStatus }),
      };
      const page: Task[] = [];
      for await (const task of ctx.client.tasks.list(filter)) page.push(task);
      for (const task of tracker.fresh(page)) {
        console.log(ctx.json ? JSON.stringify(task) : changeLine(task));
        if (flags.count !== undefined && ++printed >= flags.count) return;
      }
      warned = false;
    } catch (error) {
      // The API restarting or overloaded: keep following; anything else ends the command.
      if (!isTransient(error)) throw error;
      if (!warned) console.error(`tail: ${(error as Error).message}; retrying`);
      warned = true;
    }
    await new Promise((resolve) => setTimeout(resolve, flags.intervalMs));
  }
}

const isTransient = (error: unknown): boolean =>
  error instanceof ChronofenceApiError && [0, 408, 429, 503].includes(error.status);
