import type { HeldLease, LeaseRecord, LeaseStore } from "../../ports/lease-store.js";
import { exactMs } from "./epoch-ms.js";
import { fromPgError } from "./errors.js";
import type { PgPool } from "./pool.js";
import {
  ACQUIRE_LEASE,
  ACQUIRE_LEASES,
  DELETE_EXPIRED_MEMBERS,
  LIST_LEASES,
  RELEASE_LEASES,
  RENEW_LEASES,
} from "./sql/leases.js";

/** Leases in Postgres (see sql/leases.ts). Every method maps failures through fromPgError. */
export class PgLeaseStore implements LeaseStore {
  constructor(private readonly pool: PgPool) {}

  async acquire(name: string, owner: string, ttlMs: number, nowMs: number): Promise<number | null> {
    try {
      const result = await this.pool.query(ACQUIRE_LEASE, [name, owner, ttlMs, nowMs]);
      return result.rows.length === 0 ? null : Number(result.rows[0].epoch);
    } catch (error) {
      throw fromPgError(error, "acquire lease");
    }
  }

  async acquireAll(
    names: readonly string[],
    owner: string,
    ttlMs: number,
    nowMs: number,
  ): Promise<HeldLease[]> {
    if (names.length === 0) return [];
    try {
      const result = await this.pool.query(ACQUIRE_LEASES, [names, owner, ttlMs, nowMs]);
      return result.rows.map((row) => ({ name: row.name as string, epoch: Number(row.epoch) }));
    } catch (error) {
      throw fromPgError(error, "acquire leases");
    }
  }

  async renew(
    owner: string,
    leases: readonly HeldLease[],
    ttlMs: number,
    nowMs: number,
  ): Promise<string[]> {
    if (leases.length === 0) return [];
    try {
      const result = await this.pool.query(RENEW_LEASES, [
        owner,
        leases.map((l) => l.name),
        leases.map((l) => l.epoch),
        ttlMs,
        nowMs,
      ]);
      return result.rows.map((row) => row.name as string);
    } catch (error) {
      throw fromPgError(error, "renew leases");
    }
  }

  async release(owner: string, leases: readonly HeldLease[], _nowMs: number): Promise<string[]> {
    if (leases.length === 0) return [];
    try {
      const result = await this.pool.query(RELEASE_LEASES, [
        owner,
        leases.map((l) => l.name),
        leases.map((l) => l.epoch),
      ]);
      return result.rows.map((row) => row.name as string);
    } catch (error) {
      throw fromPgError(error, "release leases");
    }
  }

  async deleteExpiredMembers(names: readonly string[], nowMs: number): Promise<number> {
    if (names.length === 0) return 0;
    try {
      const result = await this.pool.query(DELETE_EXPIRED_MEMBERS, [names, nowMs]);
      return result.rowCount ?? 0;
    } catch (error) {
      throw fromPgError(error, "delete expired members");
    }
  }

  async list(prefixes: readonly string[]): Promise<LeaseRecord[]> {
    try {
      const result = await this.pool.query(LIST_LEASES, [prefixes]);
      return result.rows.map((row) => ({
        name: row.name,
        owner: row.owner,
        epoch: Number(row.epoch),
        expiresAtMs: exactMs(row.expires_at_ms),
      }));
    } catch (error) {
      throw fromPgError(error, "list leases");
    }
  }
}
