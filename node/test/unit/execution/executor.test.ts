import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ExecutionService } from "../../../src/app/execution/execution-service.js";
import { Executor } from "../../../src/app/execution/executor.js";
import { HandlerMap } from "../../../src/app/execution/handler-registry.js";
import { QueueLimiter } from "../../../src/app/execution/limiter.js";
import { ChronofenceError, ErrorCode, STATEMENT_TIMEOUT } from "../../../src/domain/errors.js";
import { PermanentError } from "../../../src/domain/execution-error.js";
import type { InboundEnvelope } from "../../../src/domain/inbound-envelope.js";
import type {
  CompleteOutcome,
  ExecutionFailure,
  ExecutionStore,
  FailOutcome,
  HeartbeatOutcome,
  StartOutcome,
} from "../../../src/ports/execution-store.js";
import type { DueEntry } from "../../../src/ports/hot-tier.js";
import { noWorkerMetrics, type StaleAt } from "../../../src/ports/worker-metrics.js";
import { FakeClock } from "../../support/fake-clock.js";

const statementTimeout = () =>
  new ChronofenceError(ErrorCode.Unavailable, "postgres unavailable", {
    details: { reason: STATEMENT_TIMEOUT },
  });

/** A scripted store: records calls, answers what the test says. */
class ScriptedStore implements ExecutionStore {
  startAnswer: StartOutcome = {
    kind: "started",
    execution: { attempt: 1, maxAttempts: 3, runAtMs: 0, timeoutMs: 1000, leaseExpiresAtMs: 0 },
  };
  heartbeatAnswer: HeartbeatOutcome = { kind: "extended", leaseExpiresAtMs: 0 };
  completeFailures = 0;
  completed: string[] = [];
  failed: ExecutionFailure[] = [];
  interrupted: ExecutionFailure[] = [];
  interruptFailures = 0;
  heartbeats = 0;

  /** When set, start() waits for it (a slow Postgres). */
  startGate: Promise<void> | null = null;
  /** Starts (completions) cancelled at the statement timeout before one succeeds. */
  startTimeouts = 0;
  completeTimeouts = 0;
  async start() {
    if (this.startGate) await this.startGate;
    if (this.startTimeouts > 0) {
      this.startTimeouts--;
      throw statementTimeout();
    }
    return this.startAnswer;
  }
  async heartbeat() {
    this.heartbeats++;
    return this.heartbeatAnswer;
  }
  async complete(_ref: unknown, resultJson: string): Promise<CompleteOutcome> {
    if (this.completeFailures > 0) {
      this.completeFailures--;
      throw new ChronofenceError(ErrorCode.Unavailable, "postgres down");
    }
    if (this.completeTimeouts > 0) {
      this.completeTimeouts--;
      throw statementTimeout();
    }
    this.completed.push(resultJson);
    return { kind: "completed" };
  }
  async fail(_ref: unknown, failure: ExecutionFailure): Promise<FailOutcome> {
    this.failed.push(failure);
    return { kind: "dead", attempt: 1, deadLetterId: "d" };
  }
  async interrupt(_ref: unknown, failure: ExecutionFailure): Promise<FailOutcome> {
    if (this.interruptFailures > 0) {
      this.interruptFailures--;
      throw new ChronofenceError(ErrorCode.Unavailable, "postgres down");
    }
    this.interrupted.push(failure);
    return { kind: "retrying", attempt: 1, nextRunAtMs: 0, tenantId: "t", taskId: "x" };
  }
  async handBack(): Promise<never> {
    throw new Error(
      "not used: every type here has a handler (unit/execution/unknown-type.test.ts)",
    );
  }
  async replay(): Promise<never> {
    throw new Error("not used");
  }
  async expireLeases(): Promise<never> {
    throw new Error("not used");
  }
  async parentResults(): Promise<never> {
    throw new Error("not used: the envelopes here are outside workflows");
  }
}

const envelope = (type: string, payload: unknown = null): InboundEnvelope => ({
  taskId: "0190a000-0000-7000-8000-000000000001",
  tenantId: "0190a000-0000-7000-8000-000000000002",
  type,
  attempt: 0,
  fencingToken: "42",
  runAtMs: 0,
  dispatchedAtMs: 0,
  timeoutMs: 1000,
  idempotencyKey: null,
  payload,
  workflowId: null,
});

let store: ScriptedStore;
let handlers: HandlerMap;
let stale: StaleAt[];
let added: DueEntry[];
let executor: Executor;

beforeEach(() => {
  vi.useFakeTimers();
  store = new ScriptedStore();
  handlers = new HandlerMap();
  stale = [];
  added = [];
  const hotTier = { addDue: async (entries: readonly DueEntry[]) => void added.push(...entries) };
  const onError = () => undefined;
  executor = new Executor(
    {
      executions: new ExecutionService({ store, hotTier, onError }, { hotWindowMs: 60_000 }),
      handlers,
      clock: new FakeClock(),
      metrics: { ...noWorkerMetrics, staleToken: (at) => stale.push(at) },
      onError,
    },
    {
      workerId: "w",
      leaseMs: 3000,
      heartbeatMs: 100,
      dependencyRetryMs: 10,
      maxResultBytes: 64,
    },
  );
});

afterEach(() => vi.useRealTimers());

describe("Executor", () => {
  it("does not run a task whose fenced start is stale, and counts it", async () => {
    const handler = vi.fn(async () => null);
    handlers.register("t", handler);
    store.startAnswer = { kind: "stale" };
    expect(await executor.execute(envelope("t"), "standard")).toBe("stale");
    expect(handler).not.toHaveBeenCalled();
    expect(stale).toEqual(["start"]);
  });

  it("commits the result, retrying the commit while Postgres is unavailable", async () => {
    handlers.register("t", async (payload, ctx) => ({ payload, attempt: ctx.attempt }));
    store.completeFailures = 2;
    const done = executor.execute(envelope("t", { a: 1 }), "standard");
    await vi.runAllTimersAsync();
    expect(await done).toBe("completed");
    expect(store.completed).toEqual(['{"payload":{"a":1},"attempt":1}']);
  });

  it("retries a start cancelled at the statement timeout a few times, then leaves it to the reconciler", async () => {
    const handler = vi.fn(async () => null);
    handlers.register("t", handler);
    store.startTimeouts = 4;
    const retried = executor.execute(envelope("t"), "standard");
    await vi.runAllTimersAsync();
    expect(await retried).toBe("completed");
    store.startTimeouts = 5;
    const givenUp = executor.execute(envelope("t"), "standard");
    await vi.runAllTimersAsync();
    expect(await givenUp).toBe("unrecorded");
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it("records a store call that throws at once as one that rejects: unrecorded, the handler not run", async () => {
    const handler = vi.fn(async () => null);
    handlers.register("t", handler);
    store.start = () => {
      throw new Error("a bug in the store");
    };
    expect(await executor.execute(envelope("t"), "standard")).toBe("unrecorded");
    expect(handler).not.toHaveBeenCalled();
  });

  it("never gives up a completion for statement timeouts: the handler's success is recorded", async () => {
    handlers.register("t", async () => "done");
    store.completeTimeouts = 8;
    const done = executor.execute(envelope("t"), "standard");
    await vi.runAllTimersAsync();
    expect(await done).toBe("completed");
    expect(store.completed).toEqual(['"done"']);
  });

  // An unknown type is handed back, not failed: unit/execution/unknown-type.test.ts.
  it("reports a permanent error as not retryable", async () => {
    handlers.register("t", async () => {
      throw new PermanentError("bad", { code: "E" });
    });
    expect(await executor.execute(envelope("t"), "standard")).toBe("dead");
    expect(store.failed).toEqual([{ message: "bad", code: "E", retryable: false }]);
  });

  it("tells the handler its attempt: a copy of the context carries the task's fields, not the signal", async () => {
    let copy: Record<string, unknown> = {};
    let signal: AbortSignal | undefined;
    handlers.register("t", async (_p, ctx) => {
      copy = { ...ctx };
      signal = ctx.signal;
      return null;
    });
    expect(await executor.execute(envelope("t"), "standard")).toBe("completed");
    expect(copy).toEqual({
      taskId: "0190a000-0000-7000-8000-000000000001",
      tenantId: "0190a000-0000-7000-8000-000000000002",
      type: "t",
      attempt: 1,
      maxAttempts: 3,
      fencingToken: "42",
      idempotencyKey: null,
      runAtMs: 0,
      timeoutMs: 1000,
      parentResults: null,
    });
    expect(signal?.aborted).toBe(false);
  });

  it("fails an attempt that outlives timeout_ms as a retryable timeout, aborting its signal", async () => {
    let signal: AbortSignal | undefined;
    handlers.register("t", (_p, ctx) => {
      signal = ctx.signal;
      return new Promise(() => undefined); // never settles, ignores its signal
    });
    const done = executor.execute(envelope("t"), "standard");
    await vi.advanceTimersByTimeAsync(1000);
    expect(await done).toBe("dead");
    expect(signal?.aborted).toBe(true);
    expect(store.failed).toEqual([expect.objectContaining({ code: "timeout", retryable: true })]);
    expect(store.heartbeats).toBeGreaterThanOrEqual(9);
  });

  it("abandons the attempt without a commit when a heartbeat finds the token stale", async () => {
    handlers.register(
      "t",
      (_p, ctx) =>
        new Promise((_, reject) =>
          ctx.signal.addEventListener("abort", () => reject(new Error("aborted"))),
        ),
    );
    store.heartbeatAnswer = { kind: "stale" };
    const done = executor.execute(envelope("t"), "standard");
    await vi.advanceTimersByTimeAsync(150);
    expect(await done).toBe("lost_lease");
    expect(store.completed).toEqual([]);
    expect(store.failed).toEqual([]);
    expect(stale).toEqual(["heartbeat"]);
  });

  it("refuses a result that is not JSON or too large, for good", async () => {
    handlers.register("big", async () => "x".repeat(100));
    handlers.register("bigint", async () => 1n);
    await executor.execute(envelope("big"), "standard");
    await executor.execute(envelope("bigint"), "standard");
    expect(store.failed.map((f) => [f.code, f.retryable])).toEqual([
      ["result_too_large", false],
      ["result_not_json", false],
    ]);
  });

  it("stop() aborts a running handler and records its attempt as interrupted, once", async () => {
    let signal: AbortSignal | undefined;
    handlers.register("t", (_p, ctx) => {
      signal = ctx.signal;
      return new Promise(() => undefined); // ignores its signal
    });
    const done = executor.execute(envelope("t"), "standard");
    await vi.advanceTimersByTimeAsync(50);
    executor.stop();
    expect(await done).toBe("interrupted");
    expect(signal?.aborted).toBe(true);
    expect(store.failed).toEqual([]);
    expect(store.interrupted).toEqual([
      expect.objectContaining({ code: "worker_stopping", retryable: true }),
    ]);
    expect(added).toEqual([{ tenantId: "t", taskId: "x", runAtMs: 0 }]);
  });

  it("a start that lands after stop() runs no handler", async () => {
    const handler = vi.fn(() => new Promise(() => undefined));
    handlers.register("t", handler);
    let release: () => void = () => undefined;
    store.startGate = new Promise((resolve) => {
      release = resolve;
    });
    const done = executor.execute(envelope("t"), "standard");
    await vi.advanceTimersByTimeAsync(10);
    executor.stop();
    release();
    expect(await done).toBe("interrupted");
    expect(handler).not.toHaveBeenCalled();
  });

  it("leaves an interrupted attempt to its lease when Postgres is down at the stop", async () => {
    handlers.register("t", () => new Promise(() => undefined));
    store.interruptFailures = 1;
    const done = executor.execute(envelope("t"), "standard");
    await vi.advanceTimersByTimeAsync(50);
    executor.stop();
    expect(await done).toBe("abandoned");
    expect(store.interrupted).toEqual([]);
  });

  it("after drain(), starts nothing more", async () => {
    const handler = vi.fn(async () => null);
    handlers.register("t", handler);
    executor.drain();
    expect(await executor.execute(envelope("t"), "standard")).toBe("abandoned");
    expect(handler).not.toHaveBeenCalled();
  });
});

describe("QueueLimiter", () => {
  it("caps each tenant without holding shared slots for it", async () => {
    vi.useRealTimers();
    const limiter = new QueueLimiter(2, 1);
    const order: string[] = [];
    let releaseA!: () => void;
    const blockA = new Promise<void>((resolve) => {
      releaseA = resolve;
    });
    const a1 = limiter.run("a", async () => {
      order.push("a1");
      await blockA;
    });
    const a2 = limiter.run("a", async () => {
      order.push("a2");
    });
    const b1 = limiter.run("b", async () => {
      order.push("b1");
    });
    await b1; // b passes while a's second task waits on a's cap
    expect(order).toEqual(["a1", "b1"]);
    releaseA();
    await Promise.all([a1, a2]);
    expect(order).toEqual(["a1", "b1", "a2"]);
  });
});
