/**
 * `chronofence schedules ...`: schedules are managed through the HTTP API,
 * not the database, so the CLI goes through the same validation, tenant
 * scoping, audit log and re-planning as any client, with an API key rather
 * than database credentials. Connection, `--json` and exit codes as for
 * every API command (cli-common.ts; docs/cli.md).
 */
import type { Command } from "commander";
import type { Schedule, ScheduleCreate } from "../client/types.js";
import {
  apiCommandGroup,
  type CommandContext,
  jsonArgument,
  printJson,
  runApiCommand,
  wholeNumber,
} from "./cli-common.js";

interface CreateFlags {
  name: string;
  cron: string;
  type: string;
  tz: string;
  payload?: unknown;
  priority?: string;
  misfire?: string;
  overlap?: string;
  jitterMs?: number;
  expectWithinMs?: number;
  paused?: boolean;
}

/** The body of `POST /v1/schedules` from the flags; the API validates the values. */
export function scheduleOf(flags: CreateFlags): ScheduleCreate {
  type Body = Record<string, unknown>;
  const body: Body = {
    name: flags.name,
    expression: flags.cron,
    type: flags.type,
    time_zone: flags.tz,
    ...(flags.payload !== undefined && { payload: flags.payload }),
    ...(flags.priority !== undefined && { priority: flags.priority }),
    ...(flags.misfire !== undefined && { misfire_policy: flags.misfire }),
    ...(flags.overlap !== undefined && { overlap_policy: flags.overlap }),
    ...(flags.jitterMs !== undefined && { jitter_ms: flags.jitterMs }),
    ...(flags.expectWithinMs !== undefined && { expect_within_ms: flags.expectWithinMs }),
    ...(flags.paused === true && { paused: true }),
  };
  return body as ScheduleCreate;
}

export function summary(s: Schedule): string {
  const state = s.paused ? "paused" : `next ${s.next_occurrence_at ?? "never"}`;
  return `${s.id}  ${s.name}  "${s.expression}" ${s.time_zone}  ${s.type}  ${state}`;
}

const printSchedule = (ctx: CommandContext, schedule: Schedule) =>
  console.log(ctx.json ? ctx.lastAnswerText() : summary(schedule));

export function registerScheduleCommands(program: Command): void {
  const schedules = apiCommandGroup(program, "schedules", "manage cron schedules through the API");

  schedules
    .command("list")
    .description("list the tenant's schedules")
    .action((_flags: unknown, command: Command) =>
      runApiCommand(command, async (ctx) => {
        const all: Schedule[] = [];
        for await (const s of ctx.client.schedules.list({ limit: 1000 })) all.push(s);
        if (ctx.json) printJson({ schedules: all });
        else for (const s of all) console.log(summary(s));
      }),
    );

  schedules
    .command("get <id>")
    .description("show a schedule and its latest occurrences")
    .option("--history <n>", "occurrences to show", wholeNumber, 20)
    .action((id: string, flags: { history: number }, command: Command) =>
      runApiCommand(command, async (ctx) => {
        const s = await ctx.client.schedules.get(id, { history: flags.history });
        printSchedule(ctx, s);
        if (ctx.json) return;
        for (const o of s.history) {
          console.log(`  ${o.scheduled_for}  ${o.outcome}  ${o.status ?? "-"}  ${o.task_id ?? ""}`);
        }
      }),
    );

  schedules
    .command("create")
    .description("create a schedule; prints its id first")
    .requiredOption("--name <name>", "unique within the tenant")
    .requiredOption("--cron <expression>", 'cron expression, 5 or 6 fields or an alias ("@daily")')
    .requiredOption("--type <type>", "task type of each occurrence")
    .option("--tz <zone>", "IANA time zone", "UTC")
    .option("--payload <json>", "task payload (JSON)", jsonArgument)
    .option("--priority <priority>", "critical, standard or bulk")
    .option("--misfire <policy>", "skip, fire_once or fire_all")
    .option("--overlap <policy>", "allow, skip or buffer_one")
    .option("--jitter-ms <n>", "spread each run over this many ms", wholeNumber)
    .option(
      "--expect-within-ms <n>",
      "dead man's switch: alert when not completed by then",
      wholeNumber,
    )
    .option("--paused", "create it paused")
    .action((flags: CreateFlags, command: Command) =>
      runApiCommand(command, async (ctx) => {
        printSchedule(ctx, await ctx.client.schedules.create(scheduleOf(flags)));
      }),
    );

  for (const verb of ["pause", "resume"] as const) {
    schedules
      .command(`${verb} <id>`)
      .description(`${verb} a schedule`)
      .action((id: string, _flags: unknown, command: Command) =>
        runApiCommand(command, async (ctx) => {
          printSchedule(ctx, await ctx.client.schedules[verb](id));
        }),
      );
  }

  schedules
    .command("delete <id>")
    .description("delete a schedule and cancel its occurrences not yet started")
    .action((id: string, _flags: unknown, command: Command) =>
      runApiCommand(command, async (ctx) => {
        const answer = await ctx.client.schedules.delete(id);
        console.log(
          ctx.json
            ? ctx.lastAnswerText()
            : `deleted ${id} (${answer.cancelled_task_ids.length} tasks cancelled)`,
        );
      }),
    );
}
