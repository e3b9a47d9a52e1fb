import { describe, expect, it } from "vitest";
import { GroupCommitter } from "../../../src/app/ingest/group-commit.js";
import { ChronofenceError, ErrorCode } from "../../../src/domain/errors.js";
import type { InsertOutcome, InsertRequest, TaskStore } from "../../../src/ports/task-store.js";
import { FakeClock } from "../../support/fake-clock.js";

/** A store whose commits complete only when the test says so. */
class ManualStore implements TaskStore {
  calls: Array<{ rows: readonly InsertRequest[]; finish: (error?: unknown) => void }> = [];
  insertMany(rows: readonly InsertRequest[]): Promise<InsertOutcome[]> {
    return new Promise((resolve, reject) => {
      this.calls.push({
        rows,
        finish: (error) => (error ? reject(error) : resolve(rows.map(() => ({ kind: "created" })))),
      });
    });
  }
  get = async () => null;
  list = async () => [];
  cancel = async () => ({ kind: "not_found" }) as const;
}

const row = (id: string): InsertRequest => ({
  draft: {
    id,
    tenantId: "t",
    type: "x",
    payloadJson: "null",
    priority: "bulk",
    runAtMs: 0,
    maxAttempts: 1,
    timeoutMs: 1,
    backoff: { strategy: "fixed", baseMs: 1, maxMs: 1 },
    idempotencyKey: null,
    createdAtMs: 0,
  },
  requestHash: null,
  apiKeyId: "k",
  requestId: id,
});

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** Lets the committer run until the store has seen `n` commits (bounded, no sleeps). */
async function untilCalls(store: ManualStore, n: number): Promise<void> {
  for (let turn = 0; turn < 20 && store.calls.length < n; turn++) await nextTurn();
  expect(store.calls).toHaveLength(n);
}

function committer(
  store: TaskStore,
  options = { maxBatchRows: 100, maxInFlight: 1, maxQueuedRows: 1000 },
) {
  const groups: number[] = [];
  const gc = new GroupCommitter(store, new FakeClock(), options, (group) =>
    groups.push(group.rows.length),
  );
  return { gc, groups };
}

describe("GroupCommitter", () => {
  it("groups requests that arrive while a commit is in flight into the next commit", async () => {
    const store = new ManualStore();
    const { gc } = committer(store);
    const first = gc.submit([row("a")]);
    await nextTurn();
    const queued = [gc.submit([row("b")]), gc.submit([row("c"), row("d")])];
    await nextTurn();
    expect(store.calls).toHaveLength(1);
    store.calls[0]!.finish();
    await first;
    await untilCalls(store, 2);
    expect(store.calls.map((c) => c.rows.map((r) => r.draft.id))).toEqual([["a"], ["b", "c", "d"]]);
    store.calls[1]!.finish();
    expect((await Promise.all(queued)).map((o) => o.length)).toEqual([1, 2]);
  });

  it("resolves a request only after its commit", async () => {
    const store = new ManualStore();
    const { gc } = committer(store);
    let done = false;
    const pending = gc.submit([row("a")]).then(() => {
      done = true;
    });
    await nextTurn();
    await nextTurn();
    expect(done).toBe(false);
    store.calls[0]!.finish();
    await pending;
    expect(done).toBe(true);
  });

  it("never splits one request's rows across commits, and caps a group", async () => {
    const store = new ManualStore();
    const { gc } = committer(store, { maxBatchRows: 3, maxInFlight: 1, maxQueuedRows: 1000 });
    const all = [
      gc.submit([row("a"), row("b")]),
      gc.submit([row("c"), row("d")]),
      gc.submit([row("e")]),
    ];
    await untilCalls(store, 1);
    store.calls[0]!.finish();
    await untilCalls(store, 2);
    store.calls[1]!.finish();
    await Promise.all(all);
    // [a b] alone (c d would make 4 > 3), then [c d e].
    expect(store.calls.map((c) => c.rows.length)).toEqual([2, 3]);
  });

  it("sheds load with Unavailable when the queue is full", async () => {
    const store = new ManualStore();
    const { gc } = committer(store, { maxBatchRows: 10, maxInFlight: 1, maxQueuedRows: 2 });
    void gc.submit([row("a"), row("b")]);
    await expect(gc.submit([row("c")])).rejects.toMatchObject({ code: ErrorCode.Unavailable });
  });

  it("fails the whole group on a transient error", async () => {
    const store = new ManualStore();
    const { gc } = committer(store);
    const first = gc.submit([row("a")]);
    await nextTurn();
    const queued = [gc.submit([row("b")]), gc.submit([row("c")])];
    store.calls[0]!.finish();
    await first;
    await untilCalls(store, 2);
    store.calls[1]!.finish(new ChronofenceError(ErrorCode.Unavailable, "down"));
    for (const p of queued) await expect(p).rejects.toMatchObject({ code: ErrorCode.Unavailable });
  });

  it("isolates a poison request: a non-transient failure retries each request alone", async () => {
    const store = new ManualStore();
    const { gc } = committer(store, { maxBatchRows: 100, maxInFlight: 4, maxQueuedRows: 1000 });
    const good = gc.submit([row("good")]);
    const bad = gc.submit([row("bad")]);
    await untilCalls(store, 1);
    store.calls[0]!.finish(new ChronofenceError(ErrorCode.Internal, "bug"));
    await untilCalls(store, 3);
    for (const call of store.calls.slice(1)) {
      call.finish(call.rows[0]!.draft.id === "bad" ? new Error("still bad") : undefined);
    }
    await expect(good).resolves.toHaveLength(1);
    await expect(bad).rejects.toThrow("still bad");
  });

  it("reports idle once everything has committed", async () => {
    const store = new ManualStore();
    const { gc } = committer(store);
    const pending = gc.submit([row("a")]);
    let idle = false;
    const whenIdle = gc.whenIdle().then(() => {
      idle = true;
    });
    await nextTurn();
    expect(idle).toBe(false);
    store.calls[0]!.finish();
    await pending;
    await whenIdle;
    expect(idle).toBe(true);
  });
});
