/** storedJsonBytes: what jsonb prints back (its integration twin compares it with Postgres itself). */
import { describe, expect, it } from "vitest";
import { storedJsonBytes } from "../../../src/domain/json-limits.js";

const stored = (value: unknown) => storedJsonBytes(JSON.stringify(value));

describe("storedJsonBytes", () => {
  it.each([
    [5e-324, 326],
    [1e21, 22],
    [1.5e-7, 10],
    [-1.25e30, 32],
    [1e-7, 9],
    [123.456, 7],
    [0, 1],
    [-0, 1],
    [true, 4],
    [null, 4],
  ])("%s prints as %i bytes", (value, bytes) => {
    expect(stored(value)).toBe(bytes);
  });

  it("adds a space after every comma and colon outside strings, none inside", () => {
    expect(stored({ a: [1, 2, {}], b: "x,y:z" })).toBe('{"a": [1, 2, {}], "b": "x,y:z"}'.length);
    expect(stored(['\\"', 'q"', "é"])).toBe(Buffer.byteLength('["\\\\\\"", "q\\"", "é"]'));
  });

  it("measures 64 KiB of 5e-324 as the 3 MB Postgres stores", () => {
    const payload = Array.from({ length: 9362 }, () => 5e-324);
    expect(JSON.stringify(payload).length).toBeLessThan(64 * 1024);
    expect(stored(payload)).toBeGreaterThan(3_000_000);
  });
});
