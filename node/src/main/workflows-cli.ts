/**
 * `chronofence workflows submit|get|list|cancel`, over the HTTP API through the
 * typed client (cli-common.ts; docs/cli.md). A workflow is the JSON body of
 * `POST /v1/workflows` (docs/api.md, "Workflows"), from a file, `-` for
 * stdin, or inline; `submit` prints the new workflow's id as the last line.
 */
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { MAX_LIMIT as MAX_WORKFLOW_PAGE } from "../app/dashboard/dashboard-requests.js";
import type { Workflow, WorkflowSubmission, WorkflowSummary } from "../client/types.js";
import {
  apiCommandGroup,
  type CommandContext,
  firstOf,
  pageSizeFor,
  printJson,
  runApiCommand,
  table,
  UsageError,
  wholeNumber,
} from "./cli-common.js";

/** The workflow document of `--file` (a path, or `-` for stdin) or `--nodes` (inline JSON). */
export function workflowOf(
  flags: { file?: string; nodes?: string; failFast?: boolean },
  read: (file: string) => string,
): WorkflowSubmission {
  if ((flags.file === undefined) === (flags.nodes === undefined)) {
    throw new UsageError("give --file <path|-> or --nodes <json>, one of them");
  }
  const source = flags.file ?? "--nodes";
  let text: string;
  try {
    text =
      flags.file !== undefined
        ? read(flags.file === "-" ? "/dev/stdin" : flags.file)
        : flags.nodes!;
  } catch (error) {
    throw new UsageError(`cannot read ${source}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`${source} is not JSON`);
  }
  // A bare array is the nodes; anything else is sent as it is, for the API to judge.
  const workflow = (Array.isArray(parsed) ? { nodes: parsed } : parsed) as WorkflowSubmission;
  return flags.failFast ? { ...workflow, fail_fast: true } : workflow;
}

export function workflowLines(w: Workflow): string[] {
  const head = [
    `status        ${w.status}${w.fail_fast ? " (fail_fast)" : ""}`,
    `nodes         ${w.node_count} (${w.pending_nodes} pending)`,
    `created_at    ${w.created_at}`,
    `finished_at   ${w.finished_at ?? "-"}`,
  ];
  const nodes = table(
    ["KEY", "TASK", "STATUS", "RULE", "DEPENDS_ON"],
    w.nodes.map((n) => [n.key, n.task_id, n.status, n.trigger_rule, n.depends_on.join(",")]),
  );
  return [...head, "", ...nodes, w.id];
}

export const WORKFLOW_COLUMNS = [
  "ID",
  "STATUS",
  "NODES",
  "PENDING",
  "DEAD",
  "CREATED_AT",
  "FINISHED_AT",
];
export const workflowRow = (w: WorkflowSummary): string[] => [
  w.id,
  `${w.status}${w.fail_fast ? " (fail_fast)" : ""}`,
  String(w.node_count),
  String(w.pending_nodes),
  String(w.dead_nodes),
  w.created_at,
  w.finished_at ?? "-",
];

const printWorkflow = (ctx: CommandContext, workflow: Workflow) => {
  if (ctx.json) console.log(ctx.lastAnswerText());
  else for (const line of workflowLines(workflow)) console.log(line);
};

export function registerWorkflowCommands(program: Command): void {
  const workflows = apiCommandGroup(
    program,
    "workflows",
    "submit, read, list and cancel workflows (DAGs)",
  );

  workflows
    .command("submit")
    .description("submit a workflow; prints its id as the last line")
    .option("--file <path>", 'a JSON file: {"nodes":[...],"fail_fast":false}, or - for stdin')
    .option("--nodes <json>", "the same document (or just its nodes array) inline")
    .option("--fail-fast", "a node that dies cancels the pending ones")
    .action((flags: { file?: string; nodes?: string; failFast?: boolean }, command: Command) =>
      runApiCommand(command, async (ctx) => {
        const workflow = workflowOf(flags, (file) => readFileSync(file, "utf8"));
        printWorkflow(ctx, await ctx.client.workflows.submit(workflow));
      }),
    );

  workflows
    .command("get <id>")
    .description("show a workflow and each node's state")
    .action((id: string, _flags: unknown, command: Command) =>
      runApiCommand(command, async (ctx) => printWorkflow(ctx, await ctx.client.workflows.get(id))),
    );

  workflows
    .command("list")
    .description("list the tenant's workflows, newest first, without their nodes")
    .option("--limit <n>", "at most this many (0: all)", wholeNumber, 100)
    .action((flags: { limit: number }, command: Command) =>
      runApiCommand(command, async (ctx) => {
        const pages = ctx.client.workflows.list({
          limit: pageSizeFor(flags.limit, MAX_WORKFLOW_PAGE),
        });
        const found = await firstOf(pages, flags.limit);
        if (ctx.json) printJson({ workflows: found });
        else for (const line of table(WORKFLOW_COLUMNS, found.map(workflowRow))) console.log(line);
      }),
    );

  workflows
    .command("cancel <id>")
    .description("cancel a workflow's pending nodes (running ones finish)")
    .action((id: string, _flags: unknown, command: Command) =>
      runApiCommand(command, async (ctx) =>
        printWorkflow(ctx, await ctx.client.workflows.cancel(id)),
      ),
    );
}
