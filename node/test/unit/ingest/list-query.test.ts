import { describe, expect, it } from "vitest";
import { parseListQuery } from "../../../src/app/ingest/task-queries.js";
import type { ChronofenceError } from "../../../src/domain/errors.js";

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
