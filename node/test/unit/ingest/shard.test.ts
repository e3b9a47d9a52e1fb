import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { dueKey, fnv1a32, HOT_SHARD_COUNT, shardOf } from "../../../src/domain/shard.js";
import { propertyParams } from "../../support/property.js";

describe("shardOf", () => {
  it("matches FNV-1a 32 reference values", () => {
    expect(fnv1a32("")).toBe(0x811c9dc5);
    expect(fnv1a32("a")).toBe(0xe40c292c);
    expect(fnv1a32("foobar")).toBe(0xbf9cf968);
  });

  it("is stable and always in range", () => {
    fc.assert(
      fc.property(fc.uuid(), fc.uuid(), (tenant, id) => {
        const shard = shardOf(tenant, id);
        return shard === shardOf(tenant, id) && shard >= 0 && shard < HOT_SHARD_COUNT;
      }),
      propertyParams(),
    );
  });

  it("spreads ids over all shards", () => {
    const counts = new Array(HOT_SHARD_COUNT).fill(0);
    for (let i = 0; i < 16_000; i++)
      counts[shardOf("tenant", `00000000-0000-7000-8000-${String(i).padStart(12, "0")}`)]++;
    for (const count of counts) expect(count).toBeGreaterThan(700);
  });

  it("builds Redis Cluster hash-tagged keys", () => {
    expect(dueKey("cf", 3)).toBe("cf:{3}:due");
  });
});
