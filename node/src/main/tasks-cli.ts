/**
 * `chronofence tasks submit|get|list|cancel|replay`, over the HTTP API
 * through the typed client (connection, output and exit codes:
 * cli-common.ts; docs/cli.md). `submit` prints the new task's id as the
 * last line of stdout; `--json` prints the API's answer as it came.
 */
import { type Command, Option } from "commander";
import { MAX_PAGE_LIMIT } from "../app/ingest/task-queries.js";
import type { Task, TaskFilter, TaskStatus, TaskSubmission } from "../client/types.js";
import {
  apiCommandGroup,
  type CommandContext,
  firstOf,
  jsonArgument,
  pageSizeFor,
  printJson,
  runApiCommand,
  table,
  wholeNumber,
} from "./cli-common.js";

export interface SubmitFlags {
  type: string;
  payload?: unknown;
  delayMs?: number;
  runAt?: string;
  priority?: string;
  idempotencyKey?: string;
  maxAttempts?: number;
  timeoutMs?: number;
}

/** The body of `POST /v1/tasks` from the flags; the API validates the values. */
export function submissionOf(flags: SubmitFlags): TaskSubmission {
  return {
    type: flags.type,
    ...(flags.payload !== undefined && { payload: flags.payload }),
    ...(flags.delayMs !== undefined && { delay_ms: flags.delayMs }),
    ...(flags.runAt !== undefined && { run_at: flags.runAt }),
    ...(flags.priority !== undefined && {
      priority: flags.priority as NonNullable<TaskSubmission["priority"]>,
    }),
    ...(flags.idempotencyKey !== undefined && { idempotency_key: flags.idempotencyKey }),
    ...(flags.maxAttempts !== undefined && { max_attempts: flags.maxAttempts }),
    ...(flags.timeoutMs !== undefined && { timeout_ms: flags.timeoutMs }),
  };
}

/** The human view of one task: `field  value` lines, the id last. */
export function taskLines(task: Task): string[] {
  const rows: Array<[string, string]> = [
    ["type", task.type],
    ["status", task.status],
    ["priority", task.priority],
    ["run_at", task.run_at],
    ["attempt", `${task.attempt}/${task.max_attempts}`],
    ["updated_at", task.updated_at],
  ];
  if (task.idempotency_key !== null) rows.push(["idempotency_key", task.idempotency_key]);
  if (task.workflow_id !== null) rows.push(["workflow_id", task.workflow_id]);
  if (task.schedule_id !== null) rows.push(["schedule_id", task.schedule_id]);
  if (task.last_error !== null) rows.push(["last_error", JSON.stringify(task.last_error)]);
  if (task.result !== null) rows.push(["result", JSON.stringify(task.result)]);
  rows.push(["payload", JSON.stringify(task.payload)]);
  const width = Math.max(...rows.map(([name]) => name.length));
  return [...rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`), task.id];
}

export const TASK_COLUMNS = ["ID", "TYPE", "STATUS", "ATTEMPT", "RUN_AT", "UPDATED_AT"];
export const taskRow = (t: Task): string[] => [
  t.id,
  t.type,
  t.status,
  `${t.attempt}/${t.max_attempts}`,
  t.run_at,
  t.updated_at,
];

/** Prints one task: the API's JSON as it came, or its lines. */
const printTask = (ctx: CommandContext, task: Task) => {
  if (ctx.json) console.log(ctx.lastAnswerText());
  else for (const line of taskLines(task)) console.log(line);
};

export function registerTaskCommands(program: Command): void {
  const tasks = apiCommandGroup(program, "tasks", "submit, read, list, cancel and replay tasks");

  tasks
    .command("submit")
    .description("submit a task; prints its id as the last line")
    .requiredOption("--type <type>", "the task type (its handler)")
    .option("--payload <json>", "the payload, JSON", jsonArgument)
    .addOption(
      new Option("--delay-ms <n>", "run this many ms from now")
        .argParser(wholeNumber)
        .conflicts("runAt"),
    )
    .option("--run-at <iso>", "run at this instant (RFC 3339)")
    .addOption(
      new Option("--priority <priority>", "queue").choices(["critical", "standard", "bulk"]),
    )
    .option("--idempotency-key <key>", "the same key and request answer the original task")
    .option("--max-attempts <n>", "attempts before DEAD (1-100)", wholeNumber)
    .option("--timeout-ms <n>", "the handler's time limit", wholeNumber)
    .action((flags: SubmitFlags, command: Command) =>
      runApiCommand(command, async (ctx) => {
        printTask(ctx, await ctx.client.tasks.submit(submissionOf(flags)));
      }),
    );

  tasks
    .command("get <id>")
    .description("show a task")
    .action((id: string, _flags: unknown, command: Command) =>
      runApiCommand(command, async (ctx) => printTask(ctx, await ctx.client.tasks.get(id))),
    );

  tasks
    .command("list")
    .description("list tasks, oldest first")
    .addOption(new Option("--status <status>", "only this state"))
    .option("--type <type>", "only this type")
    .option("--limit <n>", "at most this many (0: all)", wholeNumber, 100)
    .action((flags: { status?: string; type?: string; limit: number }, command: Command) =>
      runApiCommand(command, async (ctx) => {
        const found = await listed(ctx, flags);
        if (ctx.json) printJson({ tasks: found });
        else for (const line of table(TASK_COLUMNS, found.map(taskRow))) console.log(line);
      }),
    );

  for (const [verb, description] of [
    ["cancel", "cancel a task that has not started"],
    ["replay", "run a DEAD task again, due now"],
  ] as const) {
    tasks
      .command(`${verb} <id>`)
      .description(description)
      .action((id: string, _flags: unknown, command: Command) =>
        runApiCommand(command, async (ctx) => {
          const task = await (verb === "cancel"
            ? ctx.client.tasks.cancel(id)
            : ctx.client.tasks.replay(id));
          printTask(ctx, task);
        }),
      );
  }
}

function listed(
  ctx: CommandContext,
  flags: { status?: string; type?: string; limit: number },
): Promise<Task[]> {
  const filter: TaskFilter = {
    ...(flags.status !== undefined && { status: flags.status as TaskStatus }),
    ...(flags.type !== undefined && { type: flags.type }),
    limit: pageSizeFor(flags.limit, MAX_PAGE_LIMIT),
  };
  return firstOf(ctx.client.tasks.list(filter), flags.limit);
}
