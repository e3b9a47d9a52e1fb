import { describe, expect, it } from "vitest";
import { Authenticator } from "../../../src/app/shared/authenticator.js";
import type { Principal } from "../../../src/domain/tenant.js";
import { DEFAULT_TENANT_LIMITS } from "../../../src/domain/tenant.js";
import type { TenantDirectory } from "../../../src/ports/tenant-directory.js";
import { FakeClock } from "../../support/fake-clock.js";

const principal: Principal = { tenantId: "t", apiKeyId: "k", limits: DEFAULT_TENANT_LIMITS };

function directory(known: boolean) {
  const state = { lookups: 0, known };
  const dir: TenantDirectory = {
    authenticate: async () => {
      state.lookups++;
      return state.known ? principal : null;
    },
    create: async () => {
      throw new Error("unused");
    },
    list: async () => [],
    update: async () => null,
    revokeKey: async () => false,
  };
  return { dir, state };
}

const options = { cacheTtlMs: 5000, negativeCacheTtlMs: 1000, maxCachedKeys: 10 };

describe("Authenticator", () => {
  it("caches a verified key until its TTL passes", async () => {
    const clock = new FakeClock();
    const { dir, state } = directory(true);
    const auth = new Authenticator(dir, clock, options);
    expect(auth.cached("Bearer k1")).toBeUndefined();
    expect(await auth.authenticate("Bearer k1")).toBe(principal);
    expect(auth.cached("Bearer k1")).toBe(principal);
    clock.advance(5000);
    expect(auth.cached("Bearer k1")).toBeUndefined();
    await auth.authenticate("Bearer k1");
    expect(state.lookups).toBe(2);
  });

  it("coalesces concurrent lookups of one key", async () => {
    const { dir, state } = directory(true);
    const auth = new Authenticator(dir, new FakeClock(), options);
    await Promise.all(Array.from({ length: 10 }, () => auth.authenticate("Bearer k")));
    expect(state.lookups).toBe(1);
  });

  it("caches unknown keys briefly, then asks again (a key revoked or created meanwhile)", async () => {
    const clock = new FakeClock();
    const { dir, state } = directory(false);
    const auth = new Authenticator(dir, clock, options);
    await expect(auth.authenticate("Bearer nope")).rejects.toMatchObject({ code: "unauthorized" });
    expect(() => auth.cached("Bearer nope")).toThrow();
    state.known = true;
    clock.advance(1000);
    expect(await auth.authenticate("Bearer nope")).toBe(principal);
  });

  it("reads the scheme case-insensitively (RFC 7235): one key, one cache entry", async () => {
    const { dir, state } = directory(true);
    const auth = new Authenticator(dir, new FakeClock(), options);
    expect(await auth.authenticate("bearer k")).toBe(principal);
    expect(auth.cached("Bearer k")).toBe(principal);
    expect(auth.cached("BEARER  k")).toBe(principal);
    expect(state.lookups).toBe(1);
  });

  it("rejects malformed headers without a lookup", async () => {
    const { dir, state } = directory(true);
    const auth = new Authenticator(dir, new FakeClock(), options);
    for (const header of ["", "Basic x", "Bearer ", "Bearerx", `Bearer ${"x".repeat(600)}`]) {
      await expect(auth.authenticate(header)).rejects.toMatchObject({ code: "unauthorized" });
    }
    expect(state.lookups).toBe(0);
  });
});
