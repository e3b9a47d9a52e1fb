import { describe, expect, it } from "vitest";
import { isUuid, UUID } from "../../../src/domain/uuid.js";

describe("isUuid", () => {
  it.each([
    "0190a000-0000-7000-8000-000000000001",
    "0190A000-ABCD-7000-8000-00000000000F", // any case: ids are compared as uuid, not text
  ])("accepts %s", (id) => expect(isUuid(id)).toBe(true));

  it.each([
    ["too short", "0190a000-0000-7000-8000-00000000001"],
    ["too long", "0190a000-0000-7000-8000-0000000000011"],
    ["not hex", "0190a000-0000-7000-8000-00000000000g"],
    ["hyphen moved", "0190a0000-000-7000-8000-000000000001"],
    ["no hyphens", "0190a000000070008000000000000001"],
    ["braced", "{0190a000-0000-7000-8000-000000000001}"],
    ["a trailing newline", "0190a000-0000-7000-8000-000000000001\n"],
    ["empty", ""],
  ])("refuses %s", (_, id) => expect(isUuid(id)).toBe(false));

  it("refuses what is not a string", () => {
    for (const value of [null, undefined, 1, {}, ["0190a000-0000-7000-8000-000000000001"]]) {
      expect(isUuid(value)).toBe(false);
    }
  });

  it("carries no flags, so a JSON Schema pattern can hold it", () => {
    expect(UUID.flags).toBe("");
  });
});
