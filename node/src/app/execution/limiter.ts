/**
 * Concurrency limits of one queue of one worker process: at most `total`
 * tasks run at once, and at most `perTenant` of any one tenant. A task waits
 * for its tenant's slot before it queues for a shared one, so a tenant at its
 * cap holds no shared slot while it waits and the other tenants' tasks pass.
 * Waiters are served first come, first served.
 *
 * A queue may borrow from lenders (the overdue queue from the on-time ones,
 * main/worker.ts): when its own slots are taken, a task runs on a lender's
 * idle slot, so a run that falls behind — where nearly every task is late
 * and the on-time queues stand empty — keeps the whole worker's capacity
 * instead of shrinking to the overdue queue's. A lender lends only while
 * nothing of its own waits and more than a quarter of its slots stay free,
 * so on-time work that arrives still starts at once and late work never
 * holds more than three quarters of an on-time queue. A lender lends to one
 * borrower.
 */
export class Semaphore {
  private active = 0;
  private readonly waiters: Array<() => void> = [];
  /** Called when a slot is released with nobody of its own waiting (a borrower may take it). */
  onFree: (() => void) | null = null;

  constructor(readonly capacity: number) {}

  /** Takes a slot if one is free now. */
  tryAcquire(): boolean {
    if (this.active >= this.capacity) return false;
    this.active++;
    return true;
  }

  async acquire(): Promise<void> {
    if (this.tryAcquire()) return;
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else {
      this.active--;
      this.onFree?.();
    }
  }

  /** The most slots it holds while lending: a quarter stays free for its own work. */
  get lendLimit(): number {
    return Math.floor(this.capacity - this.capacity / 4);
  }

  /** Takes a slot to lend if its own work leaves more than a quarter of the slots free. */
  tryLend(): boolean {
    if (this.waiters.length > 0 || this.active + 1 > this.lendLimit) return false;
    this.active++;
    return true;
  }

  get idle(): boolean {
    return this.active === 0 && this.waiters.length === 0;
  }
}

export class QueueLimiter {
  private readonly shared: Semaphore;
  private readonly tenants = new Map<string, Semaphore>();
  /** Borrowers' tasks waiting for a slot of their own queue or of a lender, first come first served. */
  private readonly borrowWaiters: Array<() => void> = [];

  constructor(
    total: number,
    private readonly perTenant: number,
    private readonly lenders: readonly QueueLimiter[] = [],
  ) {
    this.shared = new Semaphore(total);
    if (lenders.length > 0) {
      const wake = () => this.borrowWaiters.shift()?.();
      for (const lender of lenders) lender.shared.onFree = wake;
      this.shared.onFree = wake;
    }
  }

  /** The most tasks it can run at once: its own slots and the most its lenders lend (Semaphore.tryLend). */
  get reach(): number {
    return this.lenders.reduce((sum, l) => sum + l.shared.lendLimit, this.shared.capacity);
  }

  /**
   * `onTenantWait(true)` is called when the task must wait for its tenant's
   * slot, `(false)` once it has it: the queue's consumer then does not count
   * it toward its fetch limit (ports/transport.ts Delivery), so a tenant at
   * its cap cannot fill that limit with its waiters and stop the others.
   */
  async run<T>(
    tenantId: string,
    fn: () => Promise<T>,
    onTenantWait?: (waiting: boolean) => void,
  ): Promise<T> {
    let tenant = this.tenants.get(tenantId);
    if (!tenant) {
      tenant = new Semaphore(this.perTenant);
      this.tenants.set(tenantId, tenant);
    }
    if (!tenant.tryAcquire()) {
      onTenantWait?.(true);
      await tenant.acquire();
      onTenantWait?.(false);
    }
    try {
      // A free slot of its own is taken at once: an await (two async frames) per task otherwise.
      const slot = this.shared.tryAcquire() ? this.shared : await this.slot();
      try {
        return await fn();
      } finally {
        slot.release();
      }
    } finally {
      tenant.release();
      // Forget idle tenants: the map stays as small as the tenants in flight.
      if (tenant.idle) this.tenants.delete(tenantId);
    }
  }

  /** A slot of this queue, or with lenders one of theirs, whichever frees first. */
  private async slot(): Promise<Semaphore> {
    if (this.lenders.length === 0) {
      await this.shared.acquire();
      return this.shared;
    }
    for (;;) {
      if (this.shared.tryAcquire()) return this.shared;
      const lender = this.lenders.find((l) => l.shared.tryLend());
      if (lender) return lender.shared;
      await new Promise<void>((resolve) => this.borrowWaiters.push(resolve));
    }
  }
}
