/**
 * What the dashboard routes accept (dashboard-requests.ts): the query
 * schemas and the alert body, which validate the requests and are the
 * OpenAPI document's description of them. Each refusal is 400
 * invalid_request naming the parameter (or the body's field).
 */
import { describe, expect, it } from "vitest";
import {
  AlertReportRequest,
  DeadLetterListQuery,
  parseBody,
  TaskSearchQuery,
  UpcomingQuery,
  WorkflowListQuery,
} from "../../../src/app/dashboard/dashboard-requests.js";
import { parseQuery } from "../../../src/app/dashboard/query-params.js";
import { ChronofenceError } from "../../../src/domain/errors.js";

const UPPER = "0190A000-0000-7000-8000-00000000000A";
const LOWER = UPPER.toLowerCase();

const refusal = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ChronofenceError);
    return error as ChronofenceError;
  }
  throw new Error("accepted");
};

describe("GET /v1/tasks/search's query", () => {
  it("defaults the limit and takes empty filters as absent", () => {
    expect(parseQuery(TaskSearchQuery, "")).toEqual({ limit: 50 });
    const blank = "status=&type=&priority=&run_at_from=&run_at_to=&id=&idempotency_key=&cursor=";
    expect(parseQuery(TaskSearchQuery, blank)).toEqual({
      limit: 50,
      status: undefined,
      type: undefined,
      priority: undefined,
      run_at_from: undefined,
      run_at_to: undefined,
      id: undefined,
      idempotency_key: undefined,
      cursor: undefined,
    });
  });

  it("parses every filter: instants as epoch ms, ids in lowercase; the first of a repeated one", () => {
    const query = new URLSearchParams({
      status: "DEAD",
      type: "report.build",
      priority: "bulk",
      run_at_from: "2024-01-01T00:00:00Z",
      run_at_to: "2024-01-01 01:00+02:00",
      id: UPPER,
      idempotency_key: "order-1",
      cursor: LOWER,
      limit: "500",
      unknown: "ignored",
    });
    query.append("status", "LATE");
    expect(parseQuery(TaskSearchQuery, query.toString())).toEqual({
      status: "DEAD",
      type: "report.build",
      priority: "bulk",
      run_at_from: Date.parse("2024-01-01T00:00:00Z"),
      run_at_to: Date.parse("2023-12-31T23:00:00Z"),
      id: LOWER,
      idempotency_key: "order-1",
      cursor: LOWER,
      limit: 500,
    });
  });

  it.each([
    ["status", "LATE"],
    ["priority", "urgent"],
    ["type", "a b"],
    ["type", "x".repeat(129)],
    ["type", "\u0000"],
    ["run_at_from", "yesterday"],
    ["run_at_from", "2024-01-01T00:00:00"],
    ["run_at_to", "2024-13-01T00:00:00Z"],
    ["id", "123"],
    ["idempotency_key", "has space"],
    ["idempotency_key", "k".repeat(256)],
    ["cursor", "zzz"],
    ["limit", "0"],
    ["limit", "501"],
    ["limit", ""],
    ["limit", "1e2"],
    ["limit", "+5"],
    ["limit", "5.0"],
  ])("refuses %s=%j with 400 naming it", (field, value) => {
    const error = refusal(() =>
      parseQuery(TaskSearchQuery, new URLSearchParams({ [field]: value }).toString()),
    );
    expect(error.code).toBe("invalid_request");
    expect(error.details).toEqual({ field, value: value.slice(0, 64) });
  });
});

describe("the other queries", () => {
  it("dead letters: open true unless false, a cursor of dead_at ms and id", () => {
    expect(parseQuery(DeadLetterListQuery, "")).toEqual({ limit: 50 });
    expect(parseQuery(DeadLetterListQuery, "open=false&limit=2").open).toBe("false");
    expect(parseQuery(DeadLetterListQuery, `cursor=1700000000000.5~${LOWER}`).cursor).toEqual({
      deadAtMs: 1_700_000_000_000.5,
      id: LOWER,
    });
    for (const [field, value] of [
      ["open", "maybe"],
      ["open", "TRUE"],
      ["cursor", "1~x"],
      ["cursor", `Infinity~${LOWER}`],
      ["cursor", LOWER],
    ] as const) {
      const error = refusal(() =>
        parseQuery(DeadLetterListQuery, new URLSearchParams({ [field]: value }).toString()),
      );
      expect(error.details).toMatchObject({ field });
    }
  });

  it("workflows: a cursor id and a limit", () => {
    expect(parseQuery(WorkflowListQuery, `cursor=${UPPER}&limit=1`)).toEqual({
      cursor: LOWER,
      limit: 1,
    });
    expect(refusal(() => parseQuery(WorkflowListQuery, "cursor=x")).details).toMatchObject({
      field: "cursor",
    });
  });

  it("upcoming: count 1-50, default 5", () => {
    expect(parseQuery(UpcomingQuery, "")).toEqual({ count: 5 });
    expect(parseQuery(UpcomingQuery, "count=50")).toEqual({ count: 50 });
    for (const value of ["0", "51", "", "five"]) {
      expect(refusal(() => parseQuery(UpcomingQuery, `count=${value}`)).details).toEqual({
        field: "count",
        value,
      });
    }
  });
});

describe("POST /v1/watchdog/alerts's body", () => {
  const report = {
    key: "canary",
    kind: "canary",
    state: "firing",
    message: "canary task not COMPLETED within 120000 ms",
    details: { age_ms: 130_000 },
  };

  it("accepts a report; details absent or null are {}", () => {
    expect(parseBody(AlertReportRequest, report)).toEqual(report);
    const { details: _, ...bare } = report;
    expect(parseBody(AlertReportRequest, bare).details).toEqual({});
    expect(parseBody(AlertReportRequest, { ...report, details: null }).details).toEqual({});
    const big = { ...report, details: { text: "x".repeat(16_370) } };
    expect(parseBody(AlertReportRequest, big)).toEqual(big);
  });

  it.each<[string, unknown, string]>([
    ["an array", [report], ""],
    ["null", null, ""],
    ["an unknown field", { ...report, extra: 1 }, ""],
    ["another kind", { ...report, kind: "loud" }, "kind"],
    ["another state", { ...report, state: "loud" }, "state"],
    ["an empty key", { ...report, key: "" }, "key"],
    ["a long key", { ...report, key: "k".repeat(201) }, "key"],
    ["a NUL", { ...report, message: "a\u0000b" }, "message"],
    ["a long message", { ...report, message: "m".repeat(4097) }, "message"],
    ["no message", { ...report, message: undefined }, "message"],
    ["details an array", { ...report, details: [1] }, "details"],
    ["details too large", { ...report, details: { text: "x".repeat(16_380) } }, "details"],
  ])("refuses %s with 400", (_, body, path) => {
    const error = refusal(() => parseBody(AlertReportRequest, body));
    expect(error.code).toBe("invalid_request");
    const issues = (error.details?.issues ?? []) as Array<{ path: string }>;
    expect(issues[0]?.path).toBe(path);
  });
});
