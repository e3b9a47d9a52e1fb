import { describe, expect, it } from "vitest";
import { resolveConfig } from "../../../src/config/config.js";

describe("resolveConfig", () => {
  it("has documented defaults", () => {
    const config = resolveConfig({});
    expect(config).toMatchObject({
      port: 8080,
      databaseUrl: "postgres://postgres@127.0.0.1:5432/chronofence",
      redisUrl: "redis://127.0.0.1:6379",
      redisKeyPrefix: "cf",
      horizonDays: 365,
      hotWindowMs: 3_600_000,
      retentionDays: 30,
      databaseRole: "chronofence_api",
    });
  });

  it("reads the environment, and overrides win", () => {
    const config = resolveConfig(
      { PORT: "9000", CF_HORIZON_DAYS: "30", DATABASE_URL: "postgres://x/y" },
      { port: 1 },
    );
    expect(config).toMatchObject({ port: 1, horizonDays: 30, databaseUrl: "postgres://x/y" });
  });

  it("lets an empty CF_DATABASE_ROLE keep the login role", () => {
    expect(resolveConfig({ CF_DATABASE_ROLE: "" }).databaseRole).toBe("");
  });

  it("names every bad variable in one error", () => {
    const bad = () =>
      resolveConfig({ PORT: "http", CF_PG_POOL_SIZE: "0", CF_DATABASE_ROLE: "x; DROP" });
    for (const name of ["PORT", "CF_PG_POOL_SIZE", "CF_DATABASE_ROLE"]) expect(bad).toThrow(name);
  });

  it("refuses more concurrent commits than connections", () => {
    expect(() =>
      resolveConfig({ CF_PG_POOL_SIZE: "2", CF_GROUP_COMMIT_MAX_IN_FLIGHT: "3" }),
    ).toThrow(/IN_FLIGHT/);
  });
});
