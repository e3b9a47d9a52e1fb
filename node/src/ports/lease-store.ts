/** A lease row as seen at `nowMs` (times are epoch ms of the caller's clock). */
export interface LeaseRecord {
  name: string;
  owner: string;
  epoch: number;
  expiresAtMs: number;
}

export interface HeldLease {
  name: string;
  epoch: number;
}

/**
 * Named, time-bounded leases with an epoch (docs/architecture.md section 5). Every
 * successful `acquire` increments the epoch; every other call is a no-op
 * unless the caller's (owner, epoch) is still the current, unexpired one.
 * `nowMs` is always the caller's clock, passed into the store.
 */
export interface LeaseStore {
  /** The new epoch, or null when another owner's lease is still live (or mine is: renew it instead). */
  acquire(name: string, owner: string, ttlMs: number, nowMs: number): Promise<number | null>;
  /** `acquire` for many names in one request; returns those acquired, with their new epochs. */
  acquireAll(
    names: readonly string[],
    owner: string,
    ttlMs: number,
    nowMs: number,
  ): Promise<HeldLease[]>;
  /** Extends each lease still current; returns the names that were extended. */
  renew(
    owner: string,
    leases: readonly HeldLease[],
    ttlMs: number,
    nowMs: number,
  ): Promise<string[]>;
  /** Ends the leases at once so another owner may acquire them; returns the names released. */
  release(owner: string, leases: readonly HeldLease[], nowMs: number): Promise<string[]>;
  /** Deletes the membership leases (`node:...`) among `names` expired at `nowMs`; returns how many. */
  deleteExpiredMembers(names: readonly string[], nowMs: number): Promise<number>;
  /** Every lease whose name starts with one of `prefixes`. */
  list(prefixes: readonly string[]): Promise<LeaseRecord[]>;
}
