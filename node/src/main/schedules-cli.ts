/**
 * `chronofence schedules ...`: schedules are managed through the HTTP API,
 * not the database, so the CLI goes through the same validation, tenant
 * scoping, audit log and re-planning as any client, with an API key
 * (CF_API_KEY or --api-key) rather than database credentials.
 */
import { type Command, InvalidArgumentError } from "commander";
import { ApiClient } from "../adapters/http/api-client.js";
import type { Config } from "../config/config.js";

interface ClientFlags {
  apiUrl?: string;
  apiKey?: string;
  json?: boolean;
}

export function registerScheduleCommands(program: Command, loadConfig: () => Config): void {
  const schedules = program
    .command("schedules")
    .description("manage cron schedules through the API (CF_API_URL, CF_API_KEY)")
    .option("--api-url <url>", "API base URL (default CF_API_URL)")
    .option("--api-key <key>", "API key (default CF_API_KEY)")
    .option("--json", "print the API's JSON answer");
  const clientOf = (): { client: ApiClient; json: boolean } => {
    const flags = schedules.opts<ClientFlags>();
    const config = loadConfig();
    const apiKey = flags.apiKey ?? config.apiKey;
    if (apiKey === undefined)
      throw new Error("an API key is required: set CF_API_KEY or --api-key");
    const baseUrl = flags.apiUrl ?? config.apiUrl;
    return { client: new ApiClient({ baseUrl, apiKey, timeoutMs: 10_000 }), json: !!flags.json };
  };
  const print = (json: boolean, answer: unknown, line: string) =>
    console.log(json ? JSON.stringify(answer) : line);

  schedules
    .command("list")
    .description("list the tenant's schedules")
    .action(async () => {
      const { client, json } = clientOf();
      let cursor: string | null = null;
      do {
        const query: string = cursor === null ? "" : `&cursor=${cursor}`;
        const page = await client.request("GET", `/v1/schedules?limit=1000${query}`);
        for (const s of page.schedules) print(json, s, summary(s));
        cursor = page.next_cursor;
      } while (cursor !== null);
    });

  schedules
    .command("get <id>")
    .description("show a schedule and its latest occurrences")
    .option("--history <n>", "occurrences to show", "20")
    .action(async (id: string, opts: { history: string }) => {
      const { client, json } = clientOf();
      const s = await client.request("GET", `/v1/schedules/${id}?history=${opts.history}`);
      print(json, s, summary(s));
      if (json) return;
      for (const o of s.history) {
        console.log(`  ${o.scheduled_for}  ${o.outcome}  ${o.status ?? "-"}  ${o.task_id ?? ""}`);
      }
    });

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
    .option("--jitter-ms <n>", "spread each run over this many ms", intArgument)
    .option(
      "--expect-within-ms <n>",
      "dead man's switch: alert when not completed by then",
      intArgument,
    )
    .option("--paused", "create it paused")
    .action(async (opts: Record<string, unknown>) => {
      const { client, json } = clientOf();
      const body = {
        name: opts.name,
        expression: opts.cron,
        type: opts.type,
        time_zone: opts.tz,
        ...(opts.payload !== undefined && { payload: opts.payload }),
        ...(opts.priority !== undefined && { priority: opts.priority }),
        ...(opts.misfire !== undefined && { misfire_policy: opts.misfire }),
        ...(opts.overlap !== undefined && { overlap_policy: opts.overlap }),
        ...(opts.jitterMs !== undefined && { jitter_ms: opts.jitterMs }),
        ...(opts.expectWithinMs !== undefined && { expect_within_ms: opts.expectWithinMs }),
        ...(opts.paused === true && { paused: true }),
      };
      const s = await client.request("POST", "/v1/schedules", body);
      print(json, s, summary(s));
    });

  for (const [verb, paused] of [
    ["pause", true],
    ["resume", false],
  ] as const) {
    schedules
      .command(`${verb} <id>`)
      .description(`${verb} a schedule`)
      .action(async (id: string) => {
        const { client, json } = clientOf();
        const s = await client.request("PATCH", `/v1/schedules/${id}`, { paused });
        print(json, s, summary(s));
      });
  }

  schedules
    .command("delete <id>")
    .description("delete a schedule and cancel its occurrences not yet started")
    .action(async (id: string) => {
      const { client, json } = clientOf();
      const answer = await client.request("DELETE", `/v1/schedules/${id}`);
      print(json, answer, `deleted ${id} (${answer.cancelled_task_ids.length} tasks cancelled)`);
    });
}

function summary(s: Record<string, unknown>): string {
  const state = s.paused ? "paused" : `next ${s.next_occurrence_at ?? "never"}`;
  return `${s.id}  ${s.name}  "${s.expression}" ${s.time_zone}  ${s.type}  ${state}`;
}

function jsonArgument(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new InvalidArgumentError("must be JSON");
  }
}

function intArgument(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError("must be a whole number");
  return n;
}
