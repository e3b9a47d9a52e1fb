import type { HeldLease, LeaseRecord, LeaseStore } from "../../../src/ports/lease-store.js";

/** The reference LeaseStore: the same rules as sql/leases.ts, in a Map. */
export class MemoryLeaseStore implements LeaseStore {
  readonly rows = new Map<string, LeaseRecord>();

  async acquire(name: string, owner: string, ttlMs: number, nowMs: number): Promise<number | null> {
    const row = this.rows.get(name);
    if (row && row.expiresAtMs > nowMs) return null;
    const epoch = (row?.epoch ?? 0) + 1;
    this.rows.set(name, { name, owner, epoch, expiresAtMs: nowMs + ttlMs });
    return epoch;
  }

  async acquireAll(
    names: readonly string[],
    owner: string,
    ttlMs: number,
    nowMs: number,
  ): Promise<HeldLease[]> {
    const acquired: HeldLease[] = [];
    for (const name of [...new Set(names)].sort()) {
      const epoch = await this.acquire(name, owner, ttlMs, nowMs);
      if (epoch !== null) acquired.push({ name, epoch });
    }
    return acquired;
  }

  async renew(
    owner: string,
    leases: readonly HeldLease[],
    ttlMs: number,
    nowMs: number,
  ): Promise<string[]> {
    const renewed: string[] = [];
    for (const { name, epoch } of leases) {
      const row = this.rows.get(name);
      if (row && row.owner === owner && row.epoch === epoch && row.expiresAtMs > nowMs) {
        row.expiresAtMs = nowMs + ttlMs;
        renewed.push(name);
      }
    }
    return renewed;
  }

  async release(owner: string, leases: readonly HeldLease[]): Promise<string[]> {
    const released: string[] = [];
    for (const { name, epoch } of leases) {
      const row = this.rows.get(name);
      if (row && row.owner === owner && row.epoch === epoch) {
        row.expiresAtMs = 0;
        released.push(name);
      }
    }
    return released;
  }

  async deleteExpiredMembers(names: readonly string[], nowMs: number): Promise<number> {
    let deleted = 0;
    for (const name of names) {
      const row = this.rows.get(name);
      if (row && name.startsWith("node:") && row.expiresAtMs <= nowMs) {
        this.rows.delete(name);
        deleted++;
      }
    }
    return deleted;
  }

  async list(prefixes: readonly string[]): Promise<LeaseRecord[]> {
    return [...this.rows.values()]
      .filter((r) => prefixes.some((p) => r.name.startsWith(p)))
      .map((r) => ({ ...r }));
  }
}
