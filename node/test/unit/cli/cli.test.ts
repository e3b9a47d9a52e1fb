/** The API commands' pure parts: connection resolution, exit codes, tables, flag → body, tail's tracker. */
import { CommanderError, InvalidArgumentError } from "commander";
import { describe, expect, it } from "vitest";
import { ChronofenceApiError } from "../../../src/client/errors.js";
import type { Task } from "../../../src/client/types.js";
import {
  EXIT,
  exitCodeOf,
  firstOf,
  pageSizeFor,
  resolveConnection,
  table,
  UsageError,
  wholeNumber,
} from "../../../src/main/cli-common.js";
import { ChangeTracker } from "../../../src/main/tail-cli.js";
import { submissionOf, taskLines } from "../../../src/main/tasks-cli.js";
import { WORKFLOW_COLUMNS, workflowOf, workflowRow } from "../../../src/main/workflows-cli.js";

const files = (entries: Record<string, string>) => (file: string) => entries[file] ?? null;
const dev = JSON.stringify({ api_url: "http://dev:1", api_key: "cfk_dev", tenant: "dev" });

describe("resolveConnection", () => {
  it("takes flags, then CF_API_URL/CF_API_KEY, then dev.json, each on its own", () => {
    const read = files({ "/w/.chronofence/dev.json": dev });
    expect(resolveConnection({}, {}, read, "/w")).toMatchObject({
      url: "http://dev:1",
      apiKey: "cfk_dev",
    });
    expect(resolveConnection({}, { CF_API_KEY: "cfk_env" }, read, "/w")).toMatchObject({
      url: "http://dev:1",
      apiKey: "cfk_env",
    });
    expect(
      resolveConnection(
        { apiUrl: "http://flag" },
        { CF_API_URL: "http://env", CF_API_KEY: "k" },
        read,
        "/w",
      ),
    ).toMatchObject({ url: "http://flag", apiKey: "k" });
  });

  it("reads $CF_DATA_DIR/dev.json instead when it is set, and defaults the URL", () => {
    const read = files({ "/data/dev.json": JSON.stringify({ api_key: "cfk_d" }) });
    expect(resolveConnection({}, { CF_DATA_DIR: "/data" }, read, "/w")).toEqual({
      url: "http://127.0.0.1:8080",
      apiKey: "cfk_d",
      source: "/data/dev.json",
    });
  });

  it("refuses, as a usage error, no key anywhere and a broken dev.json", () => {
    expect(() => resolveConnection({}, {}, files({}), "/w")).toThrow(UsageError);
    expect(() => resolveConnection({}, {}, files({}), "/w")).toThrow(
      /\/w\/\.chronofence\/dev\.json/,
    );
    const broken = files({ "/w/.chronofence/dev.json": "{" });
    expect(() => resolveConnection({}, {}, broken, "/w")).toThrow(/is not JSON/);
    const keyless = files({ "/w/.chronofence/dev.json": '{"api_url":"http://x"}' });
    expect(() => resolveConnection({}, {}, keyless, "/w")).toThrow(/needs "api_key"/);
  });
});

describe("exitCodeOf", () => {
  const api = (status: number) => new ChronofenceApiError(status, "c", "m");
  it("says what failed", () => {
    expect(exitCodeOf(api(404))).toBe(EXIT.notFound);
    expect(exitCodeOf(api(409))).toBe(EXIT.conflict);
    for (const s of [400, 413, 422]) expect(exitCodeOf(api(s))).toBe(EXIT.invalid);
    for (const s of [0, 408, 429, 503]) expect(exitCodeOf(api(s))).toBe(EXIT.unavailable);
    expect(exitCodeOf(api(401))).toBe(EXIT.auth);
    expect(exitCodeOf(api(500))).toBe(EXIT.failed);
    expect(exitCodeOf(new UsageError("x"))).toBe(EXIT.usage);
    expect(exitCodeOf(new InvalidArgumentError("x"))).toBe(EXIT.usage);
    expect(exitCodeOf(new CommanderError(1, "commander.unknownOption", "x"))).toBe(EXIT.usage);
    expect(exitCodeOf(new Error("bug"))).toBe(EXIT.failed);
    expect(new Set(Object.values(EXIT)).size).toBe(Object.keys(EXIT).length);
  });
});

describe("output", () => {
  it("pads table columns to their widest cell", () => {
    expect(
      table(
        ["A", "LONG"],
        [
          ["xyz", "1"],
          ["q", "22"],
        ],
      ),
    ).toEqual(["A    LONG", "xyz  1", "q    22"]);
  });

  const task: Task = {
    id: "0190a000-0000-7000-8000-000000000001",
    type: "t",
    status: "SCHEDULED",
    priority: "standard",
    run_at: "2030-01-01T00:00:00.000Z",
    payload: { a: 1 },
    attempt: 0,
    max_attempts: 3,
    timeout_ms: 30_000,
    backoff: { strategy: "exponential", base_ms: 1000, max_ms: 3_600_000 },
    idempotency_key: null,
    result: null,
    last_error: null,
    workflow_id: null,
    schedule_id: null,
    created_at: "2030-01-01T00:00:00.000Z",
    updated_at: "2030-01-01T00:00:00.000Z",
    cancelled_at: null,
    finished_at: null,
  };

  it("shows a task with its id as the last line", () => {
    const lines = taskLines(task);
    expect(lines.at(-1)).toBe(task.id);
    expect(lines).toContain("status      SCHEDULED");
    expect(lines).toContain('payload     {"a":1}');
  });

  it("turns submit flags into the API's fields, leaving out those not given", () => {
    expect(submissionOf({ type: "x" })).toEqual({ type: "x" });
    expect(
      submissionOf({
        type: "x",
        payload: null,
        delayMs: 5,
        priority: "bulk",
        idempotencyKey: "k",
        maxAttempts: 2,
      }),
    ).toEqual({
      type: "x",
      payload: null,
      delay_ms: 5,
      priority: "bulk",
      idempotency_key: "k",
      max_attempts: 2,
    });
    expect(() => wholeNumber("1.5")).toThrow(InvalidArgumentError);
    expect(() => wholeNumber("-1")).toThrow(InvalidArgumentError);
  });

  it("reads a workflow from --nodes (a document or just its nodes) or a file", () => {
    const nodes = [{ key: "a", type: "x" }];
    expect(workflowOf({ nodes: JSON.stringify(nodes) }, () => "")).toEqual({ nodes });
    expect(workflowOf({ nodes: JSON.stringify({ nodes }), failFast: true }, () => "")).toEqual({
      nodes,
      fail_fast: true,
    });
    expect(workflowOf({ file: "w.json" }, () => JSON.stringify({ nodes }))).toEqual({ nodes });
    expect(() => workflowOf({}, () => "")).toThrow(UsageError);
    expect(() => workflowOf({ nodes: "[", file: "x" }, () => "")).toThrow(UsageError);
    expect(() => workflowOf({ nodes: "[" }, () => "")).toThrow(/not JSON/);
  });
});

describe("list commands", () => {
  async function* numbers(read: number[]) {
    for (let n = 1; n <= 10; n++) {
      read.push(n);
      yield n;
    }
  }

  it("takes the first --limit items and stops reading there; 0 takes all", async () => {
    const read: number[] = [];
    expect(await firstOf(numbers(read), 3)).toEqual([1, 2, 3]);
    expect(read).toEqual([1, 2, 3]);
    expect(await firstOf(numbers([]), 0)).toHaveLength(10);
    await expect(firstOf(numbers([]), 1_000_001)).rejects.toBeInstanceOf(UsageError);
  });

  it("asks for pages no larger than the API allows, nor than --limit", () => {
    expect(pageSizeFor(0, 500)).toBe(500);
    expect(pageSizeFor(20, 500)).toBe(20);
    expect(pageSizeFor(5000, 500)).toBe(500);
  });

  it("shows a workflow summary as one row under the header", () => {
    const row = workflowRow({
      id: "w1",
      status: "RUNNING",
      fail_fast: true,
      node_count: 3,
      pending_nodes: 2,
      dead_nodes: 0,
      created_at: "2030-01-01T00:00:00.000Z",
      updated_at: "2030-01-01T00:00:01.000Z",
      finished_at: null,
    });
    expect(row).toHaveLength(WORKFLOW_COLUMNS.length);
    expect(row).toEqual([
      "w1",
      "RUNNING (fail_fast)",
      "3",
      "2",
      "0",
      "2030-01-01T00:00:00.000Z",
      "-",
    ]);
  });
});

describe("ChangeTracker (tail)", () => {
  const at = (id: string, ms: number, status = "SCHEDULED") =>
    ({ id, status, updated_at: new Date(ms).toISOString() }) as Task;

  it("prints each change once, a task again when it changes again, and late commits inside the overlap", () => {
    const tracker = new ChangeTracker(10_000, 5000);
    expect(tracker.afterMs).toBe(5000);
    expect(tracker.fresh([at("a", 6000), at("b", 12_000)]).map((t) => t.id)).toEqual(["a", "b"]);
    expect(tracker.afterMs).toBe(7000);
    // The next poll overlaps: a and b again (unchanged), a late commit c at 8000, a changed again.
    const next = tracker.fresh([at("c", 8000), at("b", 12_000), at("a", 13_000, "CANCELLED")]);
    expect(next.map((t) => `${t.id}:${t.status}`)).toEqual(["c:SCHEDULED", "a:CANCELLED"]);
    expect(tracker.fresh([at("c", 8000), at("a", 13_000, "CANCELLED")])).toEqual([]);
  });

  it("ignores changes at or before where it started", () => {
    const tracker = new ChangeTracker(10_000, 5000);
    expect(tracker.fresh([at("old", 5000), at("new", 5001)]).map((t) => t.id)).toEqual(["new"]);
  });
});
