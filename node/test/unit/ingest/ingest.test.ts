/** The ingest use case with a fake clock and the in-memory store: no Postgres, no sleeps. */
import { describe, expect, it } from "vitest";
import { GroupCommitter } from "../../../src/app/ingest/group-commit.js";
import { afterCommit, IngestService } from "../../../src/app/ingest/ingest.js";
import { RateLimiter } from "../../../src/app/shared/rate-limiter.js";
import { DEFAULT_KEY_SCOPES } from "../../../src/domain/api-keys.js";
import { ErrorCode } from "../../../src/domain/errors.js";
import { DEFAULT_TENANT_LIMITS, type Principal } from "../../../src/domain/tenant.js";
import type { DueEntry, HotTier } from "../../../src/ports/hot-tier.js";
import { noIngestMetrics } from "../../../src/ports/ingest-metrics.js";
import { FakeClock } from "../../support/fake-clock.js";
import { MemoryTaskStore } from "./memory-task-store.js";

const HOUR_MS = 3_600_000;

function setup(limits = DEFAULT_TENANT_LIMITS) {
  const clock = new FakeClock(Date.parse("2030-01-01T00:00:00Z"));
  const store = new MemoryTaskStore();
  const added: DueEntry[] = [];
  const connection = { up: true };
  const hotTier: HotTier = {
    addDue: async (entries) => {
      added.push(...entries);
    },
    isConnected: () => connection.up,
    ping: async () => undefined,
    close: async () => undefined,
  };
  let n = 0;
  const newId = () => `00000000-0000-7000-8000-${String(++n).padStart(12, "0")}`;
  const committer = new GroupCommitter(
    store,
    clock,
    { maxBatchRows: 1000, maxInFlight: 1, maxQueuedRows: 10_000 },
    afterCommit(clock, HOUR_MS, hotTier, noIngestMetrics, () => undefined),
  );
  const ingest = new IngestService(
    committer,
    store,
    hotTier,
    new RateLimiter(clock),
    clock,
    newId,
    {
      horizonMs: 365 * 24 * HOUR_MS,
      hotWindowMs: HOUR_MS,
    },
  );
  const principal: Principal = {
    tenantId: "tenant-a",
    apiKeyId: "key-a",
    limits,
    scopes: DEFAULT_KEY_SCOPES,
  };
  return { clock, store, added, ingest, principal, connection };
}

describe("IngestService", () => {
  it("refuses with 503 and writes nothing while the hot tier is disconnected", async () => {
    const { ingest, principal, store, connection } = setup();
    connection.up = false;
    const refusal = { code: ErrorCode.Unavailable };
    await expect(ingest.submitOne(principal, { type: "a" }, "r1")).rejects.toMatchObject(refusal);
    await expect(
      ingest.submitBatch(principal, { tasks: [{ type: "a" }] }, "r2"),
    ).rejects.toMatchObject(refusal);
    expect(await store.list(principal.tenantId, { limit: 10 })).toEqual([]);
    connection.up = true;
    await expect(ingest.submitOne(principal, { type: "a" }, "r3")).resolves.toMatchObject({
      replayed: false,
    });
  });

  it("adds only tasks due inside the hot window to the hot tier, after the commit", async () => {
    const { ingest, principal, added, clock } = setup();
    const soon = await ingest.submitOne(principal, { type: "a", delay_ms: HOUR_MS }, "r1");
    await ingest.submitOne(principal, { type: "a", delay_ms: HOUR_MS + 1 }, "r2");
    await new Promise((resolve) => setImmediate(resolve));
    expect(added).toEqual([
      { tenantId: "tenant-a", taskId: soon.task.id, runAtMs: clock.nowMs() + HOUR_MS },
    ]);
  });

  it("writes nothing for a rate-limited request, then accepts once tokens refill", async () => {
    const { ingest, principal, store, clock } = setup({
      ...DEFAULT_TENANT_LIMITS,
      ratePerS: 1,
      burst: 2,
    });
    await ingest.submitBatch(principal, { tasks: [{ type: "a" }, { type: "b" }] }, "r1");
    await expect(ingest.submitOne(principal, { type: "c" }, "r2")).rejects.toMatchObject({
      code: "rate_limited",
      retryAfterMs: 1000,
    });
    expect(store.tasks.size).toBe(2);
    clock.advance(1000);
    await expect(ingest.submitOne(principal, { type: "c" }, "r3")).resolves.toMatchObject({
      replayed: false,
    });
  });

  it("does not spend tokens on invalid requests", async () => {
    const { ingest, principal } = setup({ ...DEFAULT_TENANT_LIMITS, ratePerS: 1, burst: 1 });
    await expect(ingest.submitOne(principal, { type: 1 }, "r1")).rejects.toMatchObject({
      code: "invalid_request",
    });
    await expect(ingest.submitOne(principal, { type: "a" }, "r2")).resolves.toBeDefined();
  });

  it("replays the original task for the same key and body, and refuses another body", async () => {
    const { ingest, principal, store } = setup();
    const first = await ingest.submitOne(
      principal,
      { type: "a", idempotency_key: "k", payload: 1 },
      "r1",
    );
    const again = await ingest.submitOne(
      principal,
      { type: "a", idempotency_key: "k", payload: 1 },
      "r2",
    );
    expect(again).toMatchObject({ replayed: true, task: { id: first.task.id } });
    await expect(
      ingest.submitOne(principal, { type: "a", idempotency_key: "k", payload: 2 }, "r3"),
    ).rejects.toMatchObject({ code: "idempotency_conflict" });
    expect(store.tasks.size).toBe(1);
  });

  it("stamps run_at and created_at from the injected clock", async () => {
    const { ingest, principal, clock } = setup();
    clock.advance(12_345);
    const { task } = await ingest.submitOne(principal, { type: "a", delay_ms: 10 }, "r1");
    expect(task.createdAtMs).toBe(clock.nowMs());
    expect(task.runAtMs).toBe(clock.nowMs() + 10);
  });

  it("commits a batch as one group", async () => {
    const { ingest, principal, store } = setup();
    const items = await ingest.submitBatch(
      principal,
      { tasks: [{ type: "a" }, { type: "b" }, { type: "c" }] },
      "r1",
    );
    expect(items.map((i) => i.kind)).toEqual(["created", "created", "created"]);
    expect(store.commits).toBe(1);
  });
});
