import { describe, expect, it } from "vitest";
import {
  CHANGE_FEED_WINDOW_TASKS,
  parseListQuery,
  TaskQueries,
} from "../../../src/app/ingest/task-queries.js";
import type { ChronofenceError } from "../../../src/domain/errors.js";
import type { Task } from "../../../src/domain/task.js";
import type { Principal } from "../../../src/domain/tenant.js";
import { FakeClock } from "../../support/fake-clock.js";
import { MemoryTaskStore } from "./memory-task-store.js";

const codeOf = (query: Parameters<typeof parseListQuery>[0]) => {
  try {
    parseListQuery(query);
    return "ok";
  } catch (error) {
    return (error as ChronofenceError).code;
  }
};

describe("parseListQuery", () => {
  it("accepts a type only if a task could have it", () => {
    expect(parseListQuery({ type: "report:daily/v2" }).type).toBe("report:daily/v2");
    for (const type of ["", "\u0000", "a\u0000", "\ud800", "a b", "ü", "x".repeat(129)]) {
      expect(codeOf({ type }), JSON.stringify(type)).toBe("invalid_request");
    }
  });

  it("accepts only the statuses of the state machine", () => {
    expect(parseListQuery({ status: "SCHEDULED" }).status).toBe("SCHEDULED");
    for (const status of ["", "scheduled", "DONE", "SCHEDULED\u0000"]) {
      expect(codeOf({ status })).toBe("invalid_request");
    }
  });
});

describe("parseListQuery, the change feed (order=updated_at)", () => {
  it("starts after updated_after, or at a cursor, and bounds the window", () => {
    const after = parseListQuery({
      order: "updated_at",
      updated_after: "2030-01-01t00:00:00.5+01:00",
    });
    expect(after.changes).toEqual({
      after: {
        updatedAtMs: Date.parse("2029-12-31T23:00:00.500Z"),
        id: "ffffffff-ffff-ffff-ffff-ffffffffffff",
      },
      windowTasks: CHANGE_FEED_WINDOW_TASKS,
    });
    const id = "0190a000-0000-7000-8000-000000000001";
    expect(
      parseListQuery({ order: "updated_at", cursor: `1700000000123_${id}` }).changes?.after,
    ).toEqual({
      updatedAtMs: 1700000000123,
      id,
    });
    expect(parseListQuery({ order: "updated_at" }).changes?.after.updatedAtMs).toBe(0);
    expect(parseListQuery({}).changes).toBeUndefined();
  });

  it("refuses what it cannot read", () => {
    expect(codeOf({ order: "created_at" })).toBe("invalid_request");
    expect(codeOf({ updated_after: "2030-01-01T00:00:00Z" })).toBe("invalid_request");
    for (const updated_after of [
      "yesterday",
      "2030-01-01",
      "2030-01-01T00:00:00 01:00",
      "2030-13-01T00:00:00Z",
    ]) {
      expect(codeOf({ order: "updated_at", updated_after }), updated_after).toBe("invalid_request");
    }
    for (const cursor of [
      "0190a000-0000-7000-8000-000000000001",
      "x_y",
      "1_zzzzzzzz-0000-7000-8000-000000000001",
    ]) {
      expect(codeOf({ order: "updated_at", cursor }), cursor).toBe("invalid_request");
    }
  });
});

describe("TaskQueries.list, the change feed", () => {
  it("orders by (updated_at, id), pages with a cursor, and sees only the window", async () => {
    const store = new MemoryTaskStore();
    const queries = new TaskQueries(store, new FakeClock(), { cancelled: async () => undefined });
    const principal = { tenantId: "t1" } as Principal;
    const ids = [
      "0190a000-0000-7000-8000-00000000000a",
      "0190a000-0000-7000-8000-00000000000b",
      "0190a000-0000-7000-8000-00000000000c",
    ];
    ids.forEach((id, i) => {
      store.tasks.set(id, { id, tenantId: "t1", updatedAtMs: 1000 - i * 10 } as Task);
    });
    const first = await queries.list(principal, { order: "updated_at", limit: "2" });
    expect(first.tasks.map((t) => t.id)).toEqual([ids[2], ids[1]]);
    expect(first.nextCursor).toBe(`990_${ids[1]}`);
    const second = await queries.list(principal, {
      order: "updated_at",
      limit: "2",
      cursor: first.nextCursor!,
    });
    expect(second).toEqual({ tasks: [store.tasks.get(ids[0]!)], nextCursor: null });
  });
});
