/**
 * The worker's execution lease when Postgres goes away (issue 13): through
 * a proxy that stops answering (every connection open, and every new one,
 * hangs: a frozen host or a partition), heartbeats cannot renew the lease,
 * so the handler's signal aborts by the worker's own monotonic clock before
 * the lease expires in Postgres, and the worker sends nothing more for that
 * token. Through a proxy that refuses connections, a start is tried
 * CF_WORKER_START_MAX_RETRIES times, then left to the reconciler; and a
 * start that lands after an outage dates its lease from its own send, not
 * from the first try.
 */
import { randomUUID } from "node:crypto";
import net from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { systemClock } from "../../src/adapters/clock/system-clock.js";
import { PgExecutionStore } from "../../src/adapters/pg/execution-store.js";
import { createPgPool, type PgPool } from "../../src/adapters/pg/pool.js";
import { ExecutionService } from "../../src/app/execution/execution-service.js";
import { Executor, type ExecutorOptions } from "../../src/app/execution/executor.js";
import { HandlerMap } from "../../src/app/execution/handler-registry.js";
import { parseEnvelope } from "../../src/domain/inbound-envelope.js";
import { noWorkerMetrics } from "../../src/ports/worker-metrics.js";
import { startTenantFixture, type TenantFixture } from "./support/api.js";
import { type ArmedRow, armTasks, envelopeOf, taskRow } from "./support/armed-tasks.js";
import { freezingProxy } from "./support/freezing-proxy.js";
import { gateProxy } from "./support/gate-proxy.js";

vi.setConfig({ testTimeout: 60_000 });

const LEASE_MS = 4000;
const HEARTBEAT_MS = 500;
const MARGIN_MS = 1000;
const STATEMENT_TIMEOUT_MS = 1000;
/** How long a test waits for what the old code never did. */
const NEVER_MS = 20_000;

let fixture: TenantFixture;
const postgres = () => {
  const url = new URL(fixture.db.url);
  return { host: url.hostname, port: Number(url.port || 5432) };
};
const closing: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  fixture = await startTenantFixture();
});
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close().catch(() => undefined);
});
afterAll(async () => {
  await fixture?.db.drop();
});

function poolVia(port: number): PgPool {
  const url = new URL(fixture.db.url);
  url.port = String(port);
  const pool = createPgPool({
    connectionString: url.toString(),
    maxConnections: 2,
    statementTimeoutMs: STATEMENT_TIMEOUT_MS,
    connectTimeoutMs: 500,
    role: null,
    applicationName: "worker-lease-test",
    onError: () => undefined,
  });
  closing.push(() => pool.end());
  return pool;
}

function executorOn(
  pool: PgPool,
  handlers: HandlerMap,
  options: Partial<ExecutorOptions> = {},
  counted: string[] = [],
) {
  const store = new PgExecutionStore(pool, {
    rowLevelSecurity: false,
    random: Math.random,
    newId: randomUUID,
  });
  const executions = new ExecutionService(
    { store, hotTier: { addDue: async () => undefined }, onError: () => undefined },
    { hotWindowMs: 60_000 },
  );
  const executor = new Executor(
    {
      executions,
      handlers,
      clock: systemClock,
      metrics: {
        ...noWorkerMetrics,
        dependencyRetry: (what) => counted.push(what),
        leaseDeadlinePassed: () => counted.push("lease_deadline"),
      },
      onError: () => undefined,
    },
    {
      workerId: "lease-test",
      leaseMs: LEASE_MS,
      heartbeatMs: HEARTBEAT_MS,
      leaseMarginMs: MARGIN_MS,
      dependencyRetryMs: 50,
      maxResultBytes: 1024,
      ...options,
    },
  );
  closing.push(async () => executor.stop());
  return executor;
}

const envelope = (row: ArmedRow) => {
  const parsed = parseEnvelope(envelopeOf(row));
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.envelope;
};

const armOne = async () =>
  (
    await armTasks(fixture.db.url, 1, {
      tenantId: fixture.tenant.id,
      type: "hold",
      timeoutMs: 120_000,
    })
  )[0]!;

/** Resolves with what `promise` gave, or "still running" after `ms`. */
const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, new Promise<"still running">((r) => setTimeout(r, ms, "still running"))]);

/** A TCP server that accepts connections and never answers: Postgres frozen. */
async function blackHole(): Promise<number> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closing.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return (server.address() as net.AddressInfo).port;
}

describe("the local lease deadline", () => {
  it("aborts the handler before the lease expires in Postgres when heartbeats cannot land", async () => {
    const hole = await blackHole();
    let frozen = false;
    const proxy = await freezingProxy(() =>
      frozen ? { host: "127.0.0.1", port: hole } : postgres(),
    );
    closing.push(() => proxy.close());
    let abortedAtMs = 0;
    const handlers = new HandlerMap().register(
      "hold",
      (_payload, ctx) =>
        new Promise((_, reject) =>
          ctx.signal.addEventListener("abort", () => {
            abortedAtMs = Date.now();
            reject(ctx.signal.reason);
          }),
        ),
    );
    const counted: string[] = [];
    const executor = executorOn(poolVia(proxy.port), handlers, {}, counted);
    const row = await armOne();
    const done = executor.execute(envelope(row), "standard");

    // Running, and one heartbeat has renewed the lease: then Postgres stops answering.
    const first = await expect
      .poll(async () => (await taskRow(fixture.db.url, row.id)).lease_ms, { timeout: 10_000 })
      .toBeGreaterThan(0)
      .then(() => taskRow(fixture.db.url, row.id));
    await expect
      .poll(async () => (await taskRow(fixture.db.url, row.id)).lease_ms, { timeout: 10_000 })
      .toBeGreaterThan(first.lease_ms!);
    frozen = true;
    proxy.freeze();
    const frozenAtMs = Date.now();

    expect(await within(done, NEVER_MS)).toBe("lost_lease");
    const after = await taskRow(fixture.db.url, row.id);
    // The worker stopped acting before Postgres would let the reconciler take the task away.
    expect(abortedAtMs).toBeGreaterThan(0);
    expect(abortedAtMs).toBeLessThan(after.lease_ms!);
    expect(abortedAtMs - frozenAtMs).toBeLessThanOrEqual(LEASE_MS);
    // ...and sent nothing for that token: the attempt is the reconciler's to fail.
    expect(after).toMatchObject({ status: "RUNNING", attempt: 1, token: row.token });
    expect(counted).toContain("lease_deadline");
  });
});

describe("a start while Postgres is unreachable", () => {
  it("is tried startMaxRetries times, then left to the reconciler with the task still ARMED", async () => {
    const gate = await gateProxy(postgres());
    closing.push(() => gate.close());
    const handler = vi.fn(async () => null);
    const counted: string[] = [];
    const executor = executorOn(
      poolVia(gate.port),
      new HandlerMap().register("hold", handler),
      { startMaxRetries: 3 },
      counted,
    );
    const row = await armOne();
    await gate.shut();
    expect(await within(executor.execute(envelope(row), "standard"), NEVER_MS)).toBe("unrecorded");
    expect(counted.filter((what) => what === "postgres_start")).toHaveLength(3);
    expect(handler).not.toHaveBeenCalled();
    expect(await taskRow(fixture.db.url, row.id)).toMatchObject({ status: "ARMED", attempt: 0 });
  });

  it("dates the lease from the try that lands, not from the first", async () => {
    const gate = await gateProxy(postgres());
    closing.push(() => gate.close());
    let leaseAtStartMs: number | null = null;
    const executor = executorOn(
      poolVia(gate.port),
      // As the handler starts, no heartbeat has renewed the lease yet (the first is 3 s later).
      new HandlerMap().register("hold", async (_payload, ctx) => {
        leaseAtStartMs = (await taskRow(fixture.db.url, ctx.taskId)).lease_ms;
        return null;
      }),
      { startMaxRetries: 1000, dependencyRetryMs: 100, heartbeatMs: 3000 },
    );
    const row = await armOne();
    await gate.shut();
    const done = executor.execute(envelope(row), "standard");
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const openedAtMs = Date.now();
    await gate.open();
    expect(await within(done, NEVER_MS)).toBe("completed");
    // The first try was 3 s before the gate opened: a lease dated then would end 3 s sooner.
    expect(leaseAtStartMs).toBeGreaterThanOrEqual(openedAtMs + LEASE_MS - 20);
  });
});
