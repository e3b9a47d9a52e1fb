/**
 * The fuzz harness the fuzz-*.test.ts files share: a seeded case generator
 * (the run's CF_PROPERTY_SEED, node/test/support/property.ts), a sender, and
 * the property every hostile case must hold: a 4xx whose body names an error
 * code — never a 5xx, never a network error, never silence.
 *
 * Replay: a failure names each failing case's index, kind and body, and the
 * command that sends that one case again:
 *
 *   CF_PROPERTY_SEED=<seed> CF_FUZZ_CASE=<index> npx vitest run <file>
 *
 * The request deadline under load. A case answered 503 `unavailable`
 * was not refused: the server's own deadline (CF_REQUEST_TIMEOUT_MS) or
 * Postgres' statement timeout passed first, which on a CPU-starved machine
 * (32 cases in flight, the server in the test's own process) is the
 * documented answer, not a bug. Counting it as a pass would hide a handler
 * that hangs, so such a case is sent again alone once the run is over and
 * must then be refused (4xx); the number of them is printed.
 *
 * Bodies over the route's limit are sent as their headers only, with the
 * true Content-Length, and the answer read before anything else: the server
 * refuses them on the headers (413) and closes, and a client still writing
 * the body would race that close (a reset can discard the 413 before it is
 * read; uWS closes as soon as it has answered, which is what it should do).
 * Every other case goes through fetch, where a network error is a failure.
 */
import { PROPERTY_SEED, propertyParams } from "../../support/property.js";
import type { ApiFixture } from "./api.js";
import { type RawAnswer, rawRequest } from "./raw-http.js";

/** mulberry32: tiny, seedable, good enough to pick cases. */
export function prng(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  const bytes = (n: number) => Uint8Array.from({ length: n }, () => int(256));
  return { next, int, pick, bytes };
}
export type Rng = ReturnType<typeof prng>;

export interface FuzzCase {
  kind: string;
  method: string;
  path: string;
  body?: string | Uint8Array;
  /** Replaces the tenant's key; "" sends none. */
  authorization?: string;
  /** Sent as these bytes on a socket of its own instead of through fetch. */
  raw?: string;
}

export interface FuzzTarget {
  baseUrl: string;
  apiKey: string;
  /** The body limit of a route (bodies over it go as headers only). */
  limitOf(path: string): number;
}

export interface Sent {
  status: number;
  /** `error.code` of the answer, or null (none, or not JSON). */
  code: string | null;
  message: string | null;
  /** Why no status arrived (a network error, or silence). */
  error?: string;
  elapsedMs: number;
}

const bodyBytes = (body: string | Uint8Array | undefined) =>
  body === undefined ? 0 : typeof body === "string" ? Buffer.byteLength(body) : body.byteLength;

export async function send(target: FuzzTarget, c: FuzzCase): Promise<Sent> {
  const startedMs = performance.now();
  const sent = await sendTimed(target, c);
  return { ...sent, elapsedMs: Math.round(performance.now() - startedMs) };
}

async function sendTimed(target: FuzzTarget, c: FuzzCase): Promise<Omit<Sent, "elapsedMs">> {
  if (c.raw !== undefined) return sendRaw(target, c.raw);
  const headers: Record<string, string> = {
    authorization: c.authorization ?? `Bearer ${target.apiKey}`,
  };
  if (c.authorization === "") delete headers.authorization;
  if (c.body !== undefined) headers["content-type"] = "application/json";
  if (bodyBytes(c.body) > target.limitOf(c.path)) return sendHeadersOnly(target, c, headers);
  const init: RequestInit = { method: c.method, headers };
  if (c.body !== undefined) init.body = c.body as BodyInit;
  try {
    const response = await fetch(`${target.baseUrl}${c.path}`, init);
    return { status: response.status, ...errorOf(await response.text()) };
  } catch (error) {
    return {
      status: -1,
      code: null,
      message: null,
      error: String((error as Error).cause ?? error),
    };
  }
}

/** An over-limit body: its headers, with the true Content-Length; the answer must come on them. */
function sendHeadersOnly(target: FuzzTarget, c: FuzzCase, headers: Record<string, string>) {
  const lines = [`${c.method} ${c.path} HTTP/1.1`, "Host: fuzz"];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  lines.push(`Content-Length: ${bodyBytes(c.body)}`, "", "");
  return sendRaw(target, lines.join("\r\n"));
}

async function sendRaw(target: FuzzTarget, data: string): Promise<Omit<Sent, "elapsedMs">> {
  // Longer than any fixture's request deadline: the server answers first.
  const answer: RawAnswer = await rawRequest(portOf(target), data, {
    untilResponses: 1,
    timeoutMs: 30_000,
  });
  const first = answer.responses[0];
  if (first) return { status: first.status, ...errorOf(first.body) };
  if (answer.status !== null) return { status: answer.status, code: null, message: null };
  const error = answer.timedOut ? "no answer in 30 s" : "closed without a status";
  return { status: -1, code: null, message: null, error };
}

export const portOf = (target: { baseUrl: string }) => Number(new URL(target.baseUrl).port);

function errorOf(body: string): { code: string | null; message: string | null } {
  try {
    const error = (JSON.parse(body) as { error?: { code?: unknown; message?: unknown } }).error;
    return {
      code: typeof error?.code === "string" ? error.code : null,
      message: typeof error?.message === "string" ? error.message : null,
    };
  } catch {
    return { code: null, message: null };
  }
}

/** A 4xx with an error code (a raw case may get uWS's own bare 4xx). */
export function refused(c: FuzzCase, sent: Sent): boolean {
  if (sent.status < 400 || sent.status >= 500) return false;
  return c.raw !== undefined || sent.code !== null;
}

/**
 * The server was too loaded to decide (see the header): its own deadline
 * passed ("request timed out"), or Postgres cancelled a statement at its
 * timeout ("postgres unavailable during …"). Both are 503 `unavailable`.
 */
export const hitDeadline = (sent: Sent): boolean =>
  sent.status === 503 && sent.code === "unavailable";

/** What a failing case looks like in the message: enough to recognise it, the command to replay it. */
export function describeCase(file: string, index: number, c: FuzzCase, sent: Sent) {
  const content = c.raw ?? c.body;
  const bytes = bodyBytes(content);
  const text =
    content === undefined
      ? ""
      : typeof content === "string"
        ? content
        : Buffer.from(content).toString("latin1");
  return {
    index,
    kind: c.kind,
    request: `${c.method} ${c.path}`,
    status: sent.status,
    code: sent.code,
    ...(sent.error && { error: sent.error }),
    body:
      bytes > 300
        ? `${JSON.stringify(text.slice(0, 300))}… (${bytes} bytes)`
        : JSON.stringify(text),
    replay: `CF_PROPERTY_SEED=${PROPERTY_SEED} CF_FUZZ_CASE=${index} npx vitest run ${file}`,
  };
}

export interface FuzzRun {
  failures: Array<ReturnType<typeof describeCase>>;
  /** Cases that met the deadline under load and were refused when sent again alone. */
  deadlineRetried: number;
  /** Cases sent (all, or the one CF_FUZZ_CASE names). */
  sent: number;
}

/**
 * Makes `count` cases from the seed (all of them, so CF_FUZZ_CASE=i replays
 * the same i-th case), sends them `concurrency` at a time, then sends the
 * deadline 503s again alone. `check` may add a property of its own.
 */
export async function runFuzz(options: {
  file: string;
  target: FuzzTarget;
  count: number;
  generate: (rng: Rng, index: number) => FuzzCase;
  concurrency?: number;
  check?: (c: FuzzCase, sent: Sent) => boolean;
}): Promise<FuzzRun> {
  propertyParams(); // prints the seed
  const { file, target, concurrency = 32 } = options;
  const check = options.check ?? refused;
  const rng = prng(PROPERTY_SEED);
  const cases = Array.from({ length: options.count }, (_, i) => options.generate(rng, i));
  const only = process.env.CF_FUZZ_CASE;
  const chosen = only === undefined ? cases.map((_, i) => i) : [Number(only)];
  const failures: FuzzRun["failures"] = [];
  const deadline: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < chosen.length) {
        const index = chosen[next++]!;
        const c = cases[index]!;
        const sent = await send(target, c);
        if (hitDeadline(sent)) deadline.push(index);
        else if (!check(c, sent)) failures.push(describeCase(file, index, c, sent));
      }
    }),
  );
  for (const index of deadline) {
    const c = cases[index]!;
    const sent = await send(target, c);
    if (!check(c, sent)) failures.push(describeCase(file, index, c, sent));
  }
  if (deadline.length > 0) {
    console.log(
      `${file}: ${deadline.length} of ${chosen.length} cases were answered 503 unavailable under load; each was sent again alone`,
    );
  }
  return { failures, deadlineRetried: deadline.length, sent: chosen.length };
}

/** The message of a failed run: the seed and how many failed, then the first ten in full. */
export const failureMessage = (run: FuzzRun): string =>
  `seed ${PROPERTY_SEED}: ${run.failures.length} of ${run.sent} cases failed`;

/** Tables a request could write to. */
const STORED_TABLES = [
  "tasks",
  "idempotency_keys",
  "workflows",
  "workflow_nodes",
  "workflow_edges",
  "schedules",
  "schedule_occurrences",
  "dead_letters",
  "audit_log",
];

/** Row counts of every table a request could write to, to compare before and after a run. */
export async function storedRows(withDb: ApiFixture["withDb"]): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  await withDb(async (db) => {
    for (const table of STORED_TABLES) {
      counts[table] = (await db.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n;
    }
  });
  return counts;
}
