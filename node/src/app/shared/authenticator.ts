/**
 * Bearer-key authentication with a short in-memory cache, so the hot path
 * costs one SHA-256 and a map lookup, not a database round trip. The cost of
 * the cache: a revoked key keeps working for up to `cacheTtlMs`.
 *
 * Guessing keys must neither crowd out real ones nor cost a query each:
 *  - a key that cannot be one (API_KEY_PATTERN) is refused at once, without
 *    a lookup and without taking a cache entry;
 *  - keys the database did not know are remembered in a map of their own
 *    (`negativeCacheTtlMs`, at most `maxNegativeKeys`), so a flood of them
 *    evicts only other unknown keys, never a verified one;
 *  - a key never seen valid costs its client one token of a small bucket
 *    (`failureBurst`, refilled at `failureRatePerS`) before it is looked up;
 *    an empty bucket answers 429 without asking the database. A client is an
 *    IPv4 address or an IPv6 /64 (domain/ip-address.ts). Keys verified once
 *    skip the bucket when their cache entry expires, so a flood from a
 *    shared address (a NAT, a proxy) does not lock out the keys in use.
 * So a flood of random keys costs the database at most `failureBurst` plus
 * `failureRatePerS` per second per client.
 */
import { createHash } from "node:crypto";
import { API_KEY_PATTERN } from "../../domain/api-keys.js";
import { ChronofenceError, ErrorCode, RateLimitedError } from "../../domain/errors.js";
import { clientKeyOf } from "../../domain/ip-address.js";
import type { Principal } from "../../domain/tenant.js";
import { TokenBucket } from "../../domain/token-bucket.js";
import type { Clock } from "../../ports/clock.js";
import type { TenantDirectory } from "../../ports/tenant-directory.js";

export interface AuthenticatorOptions {
  cacheTtlMs: number;
  /** Unknown keys are cached too (briefly), so asking again with one costs nothing. */
  negativeCacheTtlMs: number;
  /** Verified keys held (the oldest go first). */
  maxCachedKeys: number;
  /** Unknown keys held, apart from the verified ones (the oldest go first). */
  maxNegativeKeys: number;
  /** Lookups of keys never seen valid a client may cause at once... */
  failureBurst: number;
  /** ...and per second after that. */
  failureRatePerS: number;
}

interface Entry<T> {
  value: T;
  expiresAtMs: number;
}

const MAX_HEADER_CHARS = 512;
/** Clients whose buckets are remembered (the oldest go first: a forgotten one starts full). */
const MAX_CLIENTS = 100_000;

export class Authenticator {
  private readonly verified: BoundedMap<string, Entry<Principal>>;
  private readonly unknown: BoundedMap<string, Entry<null>>;
  /** Digests that were valid once: their lookups are not guesses. */
  private readonly seenValid: BoundedMap<string, true>;
  private readonly clients = new BoundedMap<string, TokenBucket>(MAX_CLIENTS);
  private readonly pending = new Map<string, Promise<Principal | null>>();

  constructor(
    private readonly directory: TenantDirectory,
    private readonly clock: Clock,
    private readonly options: AuthenticatorOptions,
  ) {
    this.verified = new BoundedMap(options.maxCachedKeys);
    this.seenValid = new BoundedMap(options.maxCachedKeys);
    this.unknown = new BoundedMap(options.maxNegativeKeys);
  }

  /** The principal from the cache, or undefined if a lookup is needed. Throws for a key known to be bad. */
  cached(authorization: string): Principal | undefined {
    const digest = digestOf(authorization);
    const nowMs = this.clock.monotonicMs();
    const found = this.verified.get(digest);
    if (found && found.expiresAtMs > nowMs) return found.value;
    const refused = this.unknown.get(digest);
    if (refused && refused.expiresAtMs > nowMs) throw unauthorized();
    return undefined;
  }

  /** `clientAddress`: the peer's address, for the limit on guessed keys ("" counts as one client). */
  async authenticate(authorization: string, clientAddress = ""): Promise<Principal> {
    const principal = this.cached(authorization);
    if (principal) return principal;
    const digest = digestOf(authorization);
    let lookup = this.pending.get(digest);
    if (!lookup) {
      if (!this.seenValid.has(digest)) this.chargeClient(clientAddress);
      lookup = this.lookup(digest).finally(() => this.pending.delete(digest));
      this.pending.set(digest, lookup);
    }
    const found = await lookup;
    if (!found) throw unauthorized();
    return found;
  }

  private chargeClient(clientAddress: string): void {
    const nowMs = this.clock.monotonicMs();
    const key = clientKeyOf(clientAddress);
    let bucket = this.clients.get(key);
    if (!bucket) {
      bucket = new TokenBucket(this.options.failureRatePerS, this.options.failureBurst, nowMs);
      this.clients.set(key, bucket);
    }
    const taken = bucket.take(1, nowMs);
    if (!taken.ok) {
      throw new RateLimitedError(
        taken.retryAfterMs,
        this.options.failureBurst,
        taken.remaining,
        "too many unknown API keys from this client; try again later",
      );
    }
  }

  private async lookup(digest: string): Promise<Principal | null> {
    const principal = await this.directory.authenticate(Buffer.from(digest, "hex"));
    const nowMs = this.clock.monotonicMs();
    if (principal) {
      this.verified.set(digest, { value: principal, expiresAtMs: nowMs + this.options.cacheTtlMs });
      this.seenValid.set(digest, true);
      this.unknown.delete(digest);
    } else {
      this.verified.delete(digest);
      this.seenValid.delete(digest); // revoked: its lookups are guesses again
      const expiresAtMs = nowMs + this.options.negativeCacheTtlMs;
      this.unknown.set(digest, { value: null, expiresAtMs });
    }
    return principal;
  }
}

/** A Map that forgets its oldest insertion once full: good enough, the caches are shortcuts only. */
class BoundedMap<K, V> {
  private readonly map = new Map<K, V>();
  constructor(private readonly max: number) {}
  get(key: K): V | undefined {
    return this.map.get(key);
  }
  has(key: K): boolean {
    return this.map.has(key);
  }
  set(key: K, value: V): void {
    this.map.delete(key); // a re-insertion counts as new
    if (this.map.size >= this.max) {
      const oldest = this.map.keys().next();
      if (!oldest.done) this.map.delete(oldest.value);
    }
    this.map.set(key, value);
  }
  delete(key: K): void {
    this.map.delete(key);
  }
}

/** The auth scheme is case-insensitive (RFC 7235 section 2.1), then one or more spaces. */
const BEARER = /^bearer +/i;

/** Hex SHA-256 of the key in `Bearer <key>`; throws Unauthorized when malformed or not a key. */
function digestOf(authorization: string): string {
  const scheme = authorization.length > MAX_HEADER_CHARS ? null : BEARER.exec(authorization);
  if (!scheme) throw unauthorized();
  const key = authorization.slice(scheme[0].length).trim();
  if (!API_KEY_PATTERN.test(key)) throw unauthorized();
  return createHash("sha256").update(key).digest("hex");
}

const unauthorized = () =>
  new ChronofenceError(ErrorCode.Unauthorized, "missing or invalid API key");
