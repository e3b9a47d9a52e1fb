/**
 * What the CLI's API commands (`tasks`, `workflows`, `schedules`, `tail`)
 * share: where the API is, how answers are printed, and the exit codes
 * (docs/cli.md).
 *
 * Connection, first found wins, each of URL and key on its own: the
 * `--api-url`/`--api-key` flags, CF_API_URL/CF_API_KEY, then the file that
 * `chronofence dev` writes, `$CF_DATA_DIR/dev.json` or else
 * `./.chronofence/dev.json` (`{"api_url","api_key","tenant"}`); the URL
 * defaults to http://127.0.0.1:8080. So locally, after `chronofence dev`,
 * no flag is needed.
 *
 * Output: human lines (tables) by default; `--json` prints one JSON
 * document on stdout (for a failure: the API's error body, with its status).
 * Errors always get one human line on stderr.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { type Command, CommanderError, InvalidArgumentError } from "commander";
import { ChronofenceClient } from "../client/client.js";
import { ChronofenceApiError } from "../client/errors.js";

export const EXIT = {
  ok: 0,
  /** A bug, or an error the CLI did not expect. */
  failed: 1,
  /** Bad flags or arguments, no API key found, an unreadable dev.json or --file. */
  usage: 2,
  notFound: 3,
  /** 409: a state that refuses the call, an idempotency conflict, a name taken. */
  conflict: 4,
  /** 400, 413, 422: the API refused the input. */
  invalid: 5,
  /** No answer, a timeout, 503, 429 (after retries), 408: try again later. */
  unavailable: 6,
  /** 401: the key is missing, unknown or revoked. */
  auth: 7,
} as const;

/** A mistake in how the command was called (exit 2). */
export class UsageError extends Error {}

export interface ConnectionFlags {
  apiUrl?: string;
  apiKey?: string;
}

export interface Connection {
  url: string;
  apiKey: string;
  /** Where the values came from, for error messages. */
  source: string;
}

export const DEFAULT_API_URL = "http://127.0.0.1:8080";

/** Pure apart from `readFile`: flags, then the environment, then dev.json. */
export function resolveConnection(
  flags: ConnectionFlags,
  env: Readonly<Record<string, string | undefined>>,
  readFile: (file: string) => string | null,
  cwd: string,
): Connection {
  let url = flags.apiUrl ?? nonEmpty(env.CF_API_URL);
  let apiKey = flags.apiKey ?? nonEmpty(env.CF_API_KEY);
  let source = "flags and environment";
  if (url === undefined || apiKey === undefined) {
    const file = devFileOf(env, cwd);
    const dev = readDevFile(file, readFile);
    if (dev) {
      url ??= dev.api_url;
      apiKey ??= dev.api_key;
      source = file;
    }
  }
  if (apiKey === undefined) {
    throw new UsageError(
      `no API key: pass --api-key, set CF_API_KEY, or start \`chronofence dev\` (which writes ${devFileOf(env, cwd)})`,
    );
  }
  return { url: url ?? DEFAULT_API_URL, apiKey, source };
}

export const devFileOf = (env: Readonly<Record<string, string | undefined>>, cwd: string) =>
  path.resolve(cwd, nonEmpty(env.CF_DATA_DIR) ?? ".chronofence", "dev.json");

function readDevFile(
  file: string,
  readFile: (file: string) => string | null,
): { api_url?: string; api_key?: string } | null {
  const text = readFile(file);
  if (text === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`${file} is not JSON`);
  }
  const { api_url, api_key } = (parsed ?? {}) as Record<string, unknown>;
  if ((api_url !== undefined && typeof api_url !== "string") || typeof api_key !== "string") {
    throw new UsageError(`${file} needs "api_key" (and "api_url") as strings`);
  }
  return { api_key, ...(api_url !== undefined && { api_url }) };
}

const nonEmpty = (value: string | undefined) => (value === "" ? undefined : value);

export const readFileOrNull = (file: string): string | null => {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
};

/** Adds --api-url, --api-key and --json to a command group; every subcommand accepts them. */
export function apiCommandGroup(parent: Command, name: string, description: string): Command {
  return parent
    .command(name)
    .description(description)
    .option("--api-url <url>", "API base URL (default CF_API_URL, then dev.json)")
    .option("--api-key <key>", "API key (default CF_API_KEY, then dev.json)")
    .option("--json", "print one JSON document (the API's answer) instead of text")
    .exitOverride(exitOnUsageError);
}

/** Commander's own errors (unknown option, missing argument, bad value) are usage errors. */
function exitOnUsageError(error: CommanderError): never {
  process.exit(error.exitCode === 0 ? EXIT.ok : EXIT.usage);
}

export interface CommandContext {
  client: ChronofenceClient;
  json: boolean;
  /** The body text of the last successful answer: `--json` prints the API's answer as it came. */
  lastAnswerText(): string;
}

/**
 * Runs one API command: builds the client from the flags and the
 * environment, runs `body`, and on failure prints the error and sets the
 * exit code (docs/cli.md). Never throws.
 */
export async function runApiCommand(
  command: Command,
  body: (ctx: CommandContext) => Promise<void>,
): Promise<void> {
  const flags = command.optsWithGlobals<ConnectionFlags & { json?: boolean }>();
  const json = flags.json === true;
  try {
    const connection = resolveConnection(flags, process.env, readFileOrNull, process.cwd());
    let lastText = "";
    const recording: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (!response.ok) return response;
      lastText = await response.clone().text();
      return response;
    };
    const client = new ChronofenceClient({ ...connection, fetch: recording });
    await body({ client, json, lastAnswerText: () => lastText });
  } catch (error) {
    report(error, json);
    process.exitCode = exitCodeOf(error);
  }
}

export function exitCodeOf(error: unknown): number {
  if (error instanceof UsageError || error instanceof InvalidArgumentError) return EXIT.usage;
  if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  if (!(error instanceof ChronofenceApiError)) return EXIT.failed;
  const { status } = error;
  if (status === 0 || status === 408 || status === 429 || status === 503) return EXIT.unavailable;
  if (status === 401) return EXIT.auth;
  if (status === 404) return EXIT.notFound;
  if (status === 409) return EXIT.conflict;
  if (status === 400 || status === 413 || status === 422) return EXIT.invalid;
  return EXIT.failed;
}

function report(error: unknown, json: boolean): void {
  if (error instanceof ChronofenceApiError) {
    const status = error.status === 0 ? "no answer" : `HTTP ${error.status}`;
    const details =
      Object.keys(error.details).length > 0 ? ` ${JSON.stringify(error.details)}` : "";
    console.error(`error: ${error.code} (${status}): ${error.message}${details}`);
    if (json) {
      const body = { code: error.code, message: error.message, details: error.details };
      printJson({ error: body, status: error.status });
    }
    return;
  }
  console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
  if (json)
    printJson({ error: { code: "cli", message: String((error as Error)?.message ?? error) } });
}

/** Exactly one JSON document on stdout. */
export const printJson = (value: unknown): void => console.log(JSON.stringify(value));

/** A text table: a header row, then one row per item, columns padded to their widest cell. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)];
}

/** The largest --limit of a list command; 0 means every item. */
export const MAX_LIST_LIMIT = 1_000_000;

/** The page size that reads `limit` items (0: all) in the fewest requests: the API's largest page at most. */
export const pageSizeFor = (limit: number, maxPage: number): number =>
  limit === 0 ? maxPage : Math.min(limit, maxPage);

/** The first `limit` items of a list (0: all of them), stopping the iterator there. */
export async function firstOf<T>(items: AsyncIterable<T>, limit: number): Promise<T[]> {
  if (limit > MAX_LIST_LIMIT) throw new UsageError(`--limit: at most ${MAX_LIST_LIMIT}`);
  const found: T[] = [];
  for await (const item of items) {
    found.push(item);
    if (limit !== 0 && found.length >= limit) break;
  }
  return found;
}

/** Parsers for option values: a bad value is a usage error (exit 2). */
export function jsonArgument(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new InvalidArgumentError("must be JSON");
  }
}

export function wholeNumber(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) {
    throw new InvalidArgumentError("must be a whole number");
  }
  return n;
}
