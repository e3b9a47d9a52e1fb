/**
 * Bearer-key authentication with a short in-memory cache, so the hot path
 * costs one SHA-256 and a map lookup, not a database round trip. The cost of
 * the cache: a revoked key keeps working for up to `cacheTtlMs`.
 */
import { createHash } from "node:crypto";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import type { Principal } from "../../domain/tenant.js";
import type { Clock } from "../../ports/clock.js";
import type { TenantDirectory } from "../../ports/tenant-directory.js";

export interface AuthenticatorOptions {
  cacheTtlMs: number;
  /** Unknown keys are cached too (briefly), so guessing keys cannot flood Postgres. */
  negativeCacheTtlMs: number;
  maxCachedKeys: number;
}

interface Entry {
  principal: Principal | null;
  expiresAtMs: number;
}

const MAX_HEADER_CHARS = 512;

export class Authenticator {
  private readonly cache = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<Principal | null>>();

  constructor(
    private readonly directory: TenantDirectory,
    private readonly clock: Clock,
    private readonly options: AuthenticatorOptions,
  ) {}

  /** The principal from the cache, or undefined if a lookup is needed. Throws on a bad header. */
  cached(authorization: string): Principal | undefined {
    const digest = digestOf(authorization);
    const entry = this.cache.get(digest);
    if (!entry || entry.expiresAtMs <= this.clock.monotonicMs()) return undefined;
    if (entry.principal === null) throw unauthorized();
    return entry.principal;
  }

  async authenticate(authorization: string): Promise<Principal> {
    const principal = this.cached(authorization);
    if (principal) return principal;
    const digest = digestOf(authorization);
    let lookup = this.pending.get(digest);
    if (!lookup) {
      lookup = this.lookup(digest).finally(() => this.pending.delete(digest));
      this.pending.set(digest, lookup);
    }
    const found = await lookup;
    if (!found) throw unauthorized();
    return found;
  }

  private async lookup(digest: string): Promise<Principal | null> {
    const principal = await this.directory.authenticate(Buffer.from(digest, "hex"));
    const ttlMs = principal ? this.options.cacheTtlMs : this.options.negativeCacheTtlMs;
    if (this.cache.size >= this.options.maxCachedKeys) {
      // Evict the oldest insertion; good enough, the cache is a shortcut only.
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.set(digest, { principal, expiresAtMs: this.clock.monotonicMs() + ttlMs });
    return principal;
  }
}

/** The auth scheme is case-insensitive (RFC 7235 section 2.1), then one or more spaces. */
const BEARER = /^bearer +/i;

/** Hex SHA-256 of the key in `Bearer <key>`; throws Unauthorized when malformed. */
function digestOf(authorization: string): string {
  const scheme = authorization.length > MAX_HEADER_CHARS ? null : BEARER.exec(authorization);
  if (!scheme) throw unauthorized();
  const key = authorization.slice(scheme[0].length).trim();
  if (key.length === 0) throw unauthorized();
  return createHash("sha256").update(key).digest("hex");
}

const unauthorized = () =>
  new ChronofenceError(ErrorCode.Unauthorized, "missing or invalid API key");
