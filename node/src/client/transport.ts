/**
 * One HTTP exchange with the API over global fetch, with bounded retries.
 *
 * Retried: 429 always (a rate-limited request wrote nothing), and 503 when
 * the call is safe to repeat (reads, cancels, the fenced execution calls,
 * submissions carrying idempotency keys): a 503 can come after a commit
 * (the request's deadline passed), and repeating a submission without a key
 * would then create a second task. The wait is the answer's Retry-After
 * (seconds or an HTTP date), else an exponential backoff from 250 ms; never
 * more than `maxRetryDelayMs` per wait, and at most `maxRetries` retries.
 * Connection failures and timeouts are not retried: the caller cannot tell
 * whether the request arrived.
 */
import { ChronofenceApiError, errorOfAnswer } from "./errors.js";

export interface TransportOptions {
  /** The API's base URL, e.g. http://127.0.0.1:8080. */
  url: string;
  apiKey: string;
  /** Per attempt (default 30 s). */
  timeoutMs?: number;
  /** Retries of a 429 or a repeatable 503 (default 3). */
  maxRetries?: number;
  /** The longest wait before a retry (default 30 s). */
  maxRetryDelayMs?: number;
  /** Defaults to the global fetch (Node 20). */
  fetch?: typeof fetch;
  /** Defaults to setTimeout; tests pass a fake. */
  sleep?: (ms: number) => Promise<void>;
  /** Defaults to Date.now, for HTTP-date Retry-After values. */
  nowMs?: () => number;
}

export interface Call {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** May a 503 be retried (the call changes nothing when repeated)? */
  repeatable: boolean;
}

const BASE_BACKOFF_MS = 250;

export class Transport {
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly maxRetryDelayMs: number;
  private readonly fetch: typeof fetch;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly nowMs: () => number;

  constructor(private readonly options: TransportOptions) {
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxRetries = options.maxRetries ?? 3;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 30_000;
    const fetchFn = options.fetch ?? globalThis.fetch;
    // Called as a plain function: some fetch implementations refuse another `this`.
    this.fetch = (input, init) => fetchFn(input, init);
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.nowMs = options.nowMs ?? Date.now;
  }

  /** The parsed JSON of a 2xx answer; any other answer throws ChronofenceApiError. */
  async send<T>(call: Call): Promise<T> {
    for (let retry = 0; ; retry++) {
      const response = await this.attempt(call);
      const text = await response.text();
      if (response.ok) return (text === "" ? null : JSON.parse(text)) as T;
      const retryable = response.status === 429 || (response.status === 503 && call.repeatable);
      if (!retryable || retry >= this.maxRetries) throw errorOfAnswer(response.status, text);
      await this.sleep(this.delayMs(response.headers.get("retry-after"), retry));
    }
  }

  private async attempt(call: Call): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.apiKey}` };
    if (call.body !== undefined) headers["content-type"] = "application/json";
    try {
      return await this.fetch(this.urlOf(call), {
        method: call.method,
        headers,
        ...(call.body !== undefined && { body: JSON.stringify(call.body) }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      const timedOut = (error as Error).name === "TimeoutError";
      throw new ChronofenceApiError(
        0,
        timedOut ? "timeout" : "unreachable",
        timedOut
          ? `no answer from ${this.options.url} within ${this.timeoutMs} ms`
          : `API unreachable at ${this.options.url}: ${causeOf(error)}`,
        {},
        { cause: error },
      );
    }
  }

  private urlOf(call: Call): URL {
    const url = new URL(call.path, this.options.url);
    for (const [name, value] of Object.entries(call.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url;
  }

  private delayMs(retryAfter: string | null, retry: number): number {
    const backoffMs = BASE_BACKOFF_MS * 2 ** retry;
    return Math.min(this.maxRetryDelayMs, retryAfterMs(retryAfter, this.nowMs()) ?? backoffMs);
  }
}

/** Retry-After as ms: delta-seconds or an HTTP date (RFC 9110 10.2.3); null if absent or unreadable. */
export function retryAfterMs(value: string | null, nowMs: number): number | null {
  if (value === null || value.trim() === "") return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, at - nowMs) : null;
}

const causeOf = (error: unknown): string => {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
};
