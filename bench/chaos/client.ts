/**
 * The workload's HTTP client: every request goes to one of the API
 * processes and is recorded with its answer and instants (a Jepsen-style
 * history of operations). A request that got no answer (connection refused
 * or reset, timeout) has status 0: its outcome is unknown. `retrying` sends
 * an idempotent request again, to another API, until one answers — what a
 * careful client does with an idempotency key.
 */
import type { Random } from "./random.js";

export interface RequestRecord {
  op: string;
  api: number;
  sentAtMs: number;
  answeredAtMs: number;
  /** HTTP status, or 0 for no answer. */
  status: number;
  taskId?: string;
}

const TIMEOUT_MS = 10_000;

export class ChaosClient {
  readonly requests: RequestRecord[] = [];
  inFlight = 0;

  constructor(
    private readonly apiUrls: readonly string[],
    private readonly random: Random,
  ) {}

  /** `apiKey` names the tenant; `api` the API process (random if absent). */
  async send(
    op: string,
    apiKey: string,
    method: string,
    path: string,
    body?: unknown,
    api?: number,
  ) {
    const index = api ?? this.random.int(0, this.apiUrls.length - 1);
    const sentAtMs = Date.now();
    this.inFlight++;
    let status = 0;
    // biome-ignore lint/suspicious/noExplicitAny: see Answer
    let parsed: any = null;
    try {
      const response = await fetch(`${this.apiUrls[index]}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${apiKey}`,
          ...(body !== undefined && { "content-type": "application/json" }),
        },
        ...(body !== undefined && { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      const text = await response.text();
      status = response.status;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    } catch {
      status = 0;
    } finally {
      this.inFlight--;
    }
    const answeredAtMs = Date.now();
    const taskId = typeof parsed?.id === "string" ? parsed.id : undefined;
    this.requests.push({
      op,
      api: index,
      sentAtMs,
      answeredAtMs,
      status,
      ...(taskId && { taskId }),
    });
    return { status, body: parsed, sentAtMs, answeredAtMs, api: index };
  }

  /**
   * Sends until an answer that is not 0, 429 or 503 arrives, alternating APIs,
   * for at most `budgetMs`; the last answer otherwise.
   */
  async retrying(
    op: string,
    apiKey: string,
    method: string,
    path: string,
    body: unknown,
    budgetMs = 20_000,
  ) {
    const deadline = Date.now() + budgetMs;
    let api = this.random.int(0, this.apiUrls.length - 1);
    for (;;) {
      const answer = await this.send(op, apiKey, method, path, body, api);
      const retryable = answer.status === 0 || answer.status === 429 || answer.status === 503;
      if (!retryable || Date.now() > deadline) return answer;
      api = (api + 1) % this.apiUrls.length;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  }
}
