/**
 * What the recovery measurements watch (measure.ts): a probe load of small
 * tasks, each due one second after its submission, whose lateness comes
 * from the handlers' records (handlers.mjs); and a webhook receiver for the
 * watchdog's alerts, with the instant each arrived.
 */
import http from "node:http";
import type net from "node:net";
import { onCleanup } from "./cleanup.js";
import { readExecutions } from "./collect.js";
import type { LatenessSample } from "./recovery.js";

export class Probe {
  private readonly runAt = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  startedAtMs = 0;

  constructor(
    private readonly apiUrl: string,
    private readonly apiKey: string,
    private readonly ratePerS: number,
  ) {}

  start(): void {
    this.startedAtMs = Date.now();
    this.timer = setInterval(
      () => void this.submit({ mode: "succeed" }, 1000),
      1000 / this.ratePerS,
    );
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** `count` tasks of `ms` each, due now: work in flight for a drain to wait for (not sampled). */
  async slowTasks(count: number, ms: number): Promise<void> {
    await Promise.all(
      Array.from({ length: count }, () => this.submit({ mode: "slow", ms }, 0, false)),
    );
  }

  /** Each probe task's first handler start against its run_at. */
  async samples(execDir: string): Promise<LatenessSample[]> {
    const firstStart = new Map<string, number>();
    for (const e of await readExecutions(execDir))
      if (this.runAt.has(e.taskId))
        firstStart.set(e.taskId, Math.min(e.startedAtMs, firstStart.get(e.taskId) ?? Infinity));
    return [...firstStart].map(([id, startMs]) => {
      const dueMs = this.runAt.get(id)!;
      return { dueMs, latenessMs: startMs - dueMs };
    });
  }

  private async submit(payload: unknown, delayMs: number, sampled = true): Promise<void> {
    try {
      const response = await fetch(`${this.apiUrl}/v1/tasks`, {
        method: "POST",
        headers: { authorization: `Bearer ${this.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ type: "chaos.run", payload, delay_ms: delayMs, max_attempts: 10 }),
        signal: AbortSignal.timeout(10_000),
      });
      const body = (await response.json()) as { id?: string; run_at?: string };
      if (response.status === 201 && body.id && sampled)
        this.runAt.set(body.id, Date.parse(body.run_at ?? ""));
    } catch {
      // No answer: not a sample (the task may exist; its lateness is not known to be the probe's).
    }
  }
}

export interface AlertReceiver {
  url: string;
  /** The state of the latest alert with `key` so far ("firing", "resolved"), or null for none. */
  last(key: string): string | null;
  /** The arrival instant of the first alert with `key` and `state` after this call, or null by `timeoutMs`. */
  next(key: string, state: "firing" | "resolved", timeoutMs: number): Promise<number | null>;
}

export async function startAlertReceiver(): Promise<AlertReceiver> {
  const received: Array<{ key: string; state: string; atMs: number }> = [];
  const server = http.createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => {
      body += chunk;
    });
    request.on("end", () => {
      try {
        const alert = JSON.parse(body) as { key?: string; state?: string };
        received.push({ key: alert.key ?? "", state: alert.state ?? "", atMs: Date.now() });
      } catch {
        // not an alert
      }
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onCleanup("alert receiver", () => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/alerts`,
    last: (key) => received.filter((a) => a.key === key).at(-1)?.state ?? null,
    async next(key, state, timeoutMs) {
      const fromMs = Date.now();
      const deadline = fromMs + timeoutMs;
      while (Date.now() < deadline) {
        const hit = received.find((a) => a.atMs >= fromMs && a.key === key && a.state === state);
        if (hit) return hit.atMs;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return null;
    },
  };
}
