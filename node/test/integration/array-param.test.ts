/**
 * The array literals of adapters/pg/array-param.ts read back in Postgres as
 * the arrays node-pg would have sent for the same values.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { plainArray, textArray } from "../../src/adapters/pg/array-param.js";
import { ADMIN_DATABASE_URL, requirePostgres, withPg } from "./support/services.js";

beforeAll(requirePostgres);

describe("array parameters", () => {
  it("reads uuids, tokens, numbers and NULLs as node-pg's own arrays", async () => {
    const uuids = [randomUUID(), randomUUID().toUpperCase(), null];
    const tokens = ["1", "922337203685477580", null];
    const numbers = [1_700_000_000_123, -0.5, 1e21, null];
    const row = await withPg(ADMIN_DATABASE_URL, async (client) => {
      const result = await client.query(
        `SELECT $1::uuid[] = $2::uuid[] AS uuids, $3::bigint[] = $4::bigint[] AS tokens,
                $5::float8[] = $6::float8[] AS numbers, $5::float8[] AS read_back`,
        [plainArray(uuids), uuids, plainArray(tokens), tokens, plainArray(numbers), numbers],
      );
      return result.rows[0];
    });
    expect(row).toMatchObject({ uuids: true, tokens: true, numbers: true });
    expect(row.read_back).toEqual(numbers);
  });

  it("quotes text so that any string reads back as itself", async () => {
    const texts = ['{"a":"b\\\\c"}', "", "NULL", "a,b", "{}", ' sp "q" \\ ', "ü✓"];
    const row = await withPg(ADMIN_DATABASE_URL, async (client) => {
      const result = await client.query("SELECT $1::text[] AS texts", [textArray(texts)]);
      return result.rows[0];
    });
    expect(row.texts).toEqual(texts);
  });

  it("refuses an element that would need quoting", () => {
    expect(() => plainArray(["a,b"])).toThrow(TypeError);
    expect(() => plainArray(['"x'])).toThrow(TypeError);
    expect(() => plainArray(["null"])).toThrow(TypeError);
    expect(() => plainArray([""])).toThrow(TypeError);
  });
});
