import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { Authenticator, type AuthenticatorOptions } from "../../../src/app/shared/authenticator.js";
import { DEFAULT_KEY_SCOPES } from "../../../src/domain/api-keys.js";
import type { Principal } from "../../../src/domain/tenant.js";
import { DEFAULT_TENANT_LIMITS } from "../../../src/domain/tenant.js";
import type { TenantDirectory } from "../../../src/ports/tenant-directory.js";
import { FakeClock } from "../../support/fake-clock.js";

const principal: Principal = {
  tenantId: "t",
  apiKeyId: "k",
  limits: DEFAULT_TENANT_LIMITS,
  scopes: DEFAULT_KEY_SCOPES,
};

/** A well-formed key: `cfk_` and 43 base64url characters. */
const newKey = () => `cfk_${randomBytes(32).toString("base64url")}`;
const K1 = newKey();

/** A directory that knows the keys in `valid` and counts every lookup. */
function directory(valid: Set<string> | "all" | "none") {
  const state = { lookups: 0, valid };
  const dir: TenantDirectory = {
    authenticate: async (hash) => {
      state.lookups++;
      const hex = Buffer.from(hash).toString("hex");
      if (state.valid === "all") return principal;
      if (state.valid === "none") return null;
      return state.valid.has(hex) ? principal : null;
    },
    create: async () => {
      throw new Error("unused");
    },
    createKey: async () => null,
    list: async () => [],
    update: async () => null,
    revokeKey: async () => false,
  };
  return { dir, state };
}

const options: AuthenticatorOptions = {
  cacheTtlMs: 5000,
  negativeCacheTtlMs: 1000,
  maxCachedKeys: 10,
  maxNegativeKeys: 10,
  failureBurst: 5,
  failureRatePerS: 1,
};

const sha256 = async (key: string) =>
  Buffer.from(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key))).toString("hex");

describe("Authenticator", () => {
  it("caches a verified key until its TTL passes", async () => {
    const clock = new FakeClock();
    const { dir, state } = directory("all");
    const auth = new Authenticator(dir, clock, options);
    expect(auth.cached(`Bearer ${K1}`)).toBeUndefined();
    expect(await auth.authenticate(`Bearer ${K1}`)).toBe(principal);
    expect(auth.cached(`Bearer ${K1}`)).toBe(principal);
    clock.advance(5000);
    expect(auth.cached(`Bearer ${K1}`)).toBeUndefined();
    await auth.authenticate(`Bearer ${K1}`);
    expect(state.lookups).toBe(2);
  });

  it("coalesces concurrent lookups of one key", async () => {
    const { dir, state } = directory("all");
    const auth = new Authenticator(dir, new FakeClock(), options);
    await Promise.all(Array.from({ length: 10 }, () => auth.authenticate(`Bearer ${K1}`)));
    expect(state.lookups).toBe(1);
  });

  it("caches unknown keys briefly, then asks again (a key revoked or created meanwhile)", async () => {
    const clock = new FakeClock();
    const { dir, state } = directory("none");
    const auth = new Authenticator(dir, clock, options);
    await expect(auth.authenticate(`Bearer ${K1}`)).rejects.toMatchObject({
      code: "unauthorized",
    });
    expect(() => auth.cached(`Bearer ${K1}`)).toThrow();
    state.valid = "all";
    clock.advance(1000);
    expect(await auth.authenticate(`Bearer ${K1}`)).toBe(principal);
  });

  it("reads the scheme case-insensitively (RFC 7235): one key, one cache entry", async () => {
    const { dir, state } = directory("all");
    const auth = new Authenticator(dir, new FakeClock(), options);
    expect(await auth.authenticate(`bearer ${K1}`)).toBe(principal);
    expect(auth.cached(`Bearer ${K1}`)).toBe(principal);
    expect(auth.cached(`BEARER  ${K1}`)).toBe(principal);
    expect(state.lookups).toBe(1);
  });

  it("rejects malformed headers, and strings that cannot be keys, without a lookup", async () => {
    const { dir, state } = directory("all");
    const auth = new Authenticator(dir, new FakeClock(), options);
    const notKeys = ["k", "cfk_short", `cfk_${"a".repeat(44)}`, `xyz_${"a".repeat(43)}`];
    for (const header of [
      "",
      "Basic x",
      "Bearer ",
      "Bearerx",
      `Bearer ${"x".repeat(600)}`,
      ...notKeys.map((k) => `Bearer ${k}`),
    ]) {
      await expect(auth.authenticate(header)).rejects.toMatchObject({ code: "unauthorized" });
      expect(() => auth.cached(header)).toThrow();
    }
    expect(state.lookups).toBe(0);
  });
});

describe("Authenticator under a flood of random keys", () => {
  it("keeps valid keys cached, asks the database at most the client's burst, then answers 429", async () => {
    const clock = new FakeClock();
    const valid = [newKey(), newKey(), newKey()];
    const { dir, state } = directory(new Set(await Promise.all(valid.map(sha256))));
    const auth = new Authenticator(dir, clock, { ...options, maxCachedKeys: 3 });
    for (const key of valid) await auth.authenticate(`Bearer ${key}`, "203.0.113.9");
    expect(state.lookups).toBe(3);

    const codes = new Map<string, number>();
    for (let i = 0; i < 1000; i++) {
      const code = await auth.authenticate(`Bearer ${newKey()}`, "198.51.100.7").then(
        () => "ok",
        (error: { code: string }) => error.code,
      );
      codes.set(code, (codes.get(code) ?? 0) + 1);
    }
    // The flooding client's burst, then 429 without a query.
    expect(Object.fromEntries(codes)).toEqual({ unauthorized: 5, rate_limited: 995 });
    expect(state.lookups).toBe(3 + 5);
    // Unknown keys have a cache of their own: every valid key is still cached.
    for (const key of valid) expect(auth.cached(`Bearer ${key}`)).toBe(principal);
    expect(state.lookups).toBe(8);

    // A second of refill buys one more lookup; other clients have their own budget.
    clock.advance(1000);
    await expect(auth.authenticate(`Bearer ${newKey()}`, "198.51.100.7")).rejects.toMatchObject({
      code: "unauthorized",
    });
    await expect(auth.authenticate(`Bearer ${newKey()}`, "198.51.100.7")).rejects.toMatchObject({
      code: "rate_limited",
    });
    await expect(auth.authenticate(`Bearer ${newKey()}`, "192.0.2.1")).rejects.toMatchObject({
      code: "unauthorized",
    });
    expect(state.lookups).toBe(10);
  });

  it("lets a key verified before through its client's empty bucket when its cache entry expires", async () => {
    const clock = new FakeClock();
    const key = newKey();
    const { dir } = directory(new Set([await sha256(key)]));
    const auth = new Authenticator(dir, clock, options);
    await auth.authenticate(`Bearer ${key}`, "10.0.0.1");
    for (let i = 0; i < 20; i++) {
      await auth.authenticate(`Bearer ${newKey()}`, "10.0.0.1").catch(() => undefined);
    }
    await expect(auth.authenticate(`Bearer ${newKey()}`, "10.0.0.1")).rejects.toMatchObject({
      code: "rate_limited",
    });
    clock.advance(options.cacheTtlMs);
    expect(auth.cached(`Bearer ${key}`)).toBeUndefined();
    expect(await auth.authenticate(`Bearer ${key}`, "10.0.0.1")).toBe(principal);
  });

  it("counts an IPv6 client by its /64, and an IPv4-mapped address as its IPv4 address", async () => {
    const { dir, state } = directory("none");
    const auth = new Authenticator(dir, new FakeClock(), { ...options, failureRatePerS: 0 });
    const from = ["2001:db8:1:2::1", "2001:db8:1:2:ffff::9", "2001:0db8:0001:0002::abcd"];
    for (let i = 0; i < 10; i++) {
      await auth.authenticate(`Bearer ${newKey()}`, from[i % 3]!).catch(() => undefined);
    }
    expect(state.lookups).toBe(5);
    for (const address of ["192.0.2.8", "::ffff:192.0.2.8"]) {
      for (let i = 0; i < 5; i++) {
        await auth.authenticate(`Bearer ${newKey()}`, address).catch(() => undefined);
      }
    }
    expect(state.lookups).toBe(10);
  });
});
