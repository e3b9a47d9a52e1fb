/**
 * Concurrency limits of one queue of one worker process: at most `total`
 * tasks run at once, and at most `perTenant` of any one tenant. A task waits
 * for its tenant's slot before it queues for a shared one, so a tenant at its
 * cap holds no shared slot while it waits and the other tenants' tasks pass.
 * Waiters are served first come, first served.
 */
export class Semaphore {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private readonly capacity: number) {}

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
    else this.active--;
  }

  get idle(): boolean {
    return this.active === 0 && this.waiters.length === 0;
  }
}

export class QueueLimiter {
  private readonly shared: Semaphore;
  private readonly tenants = new Map<string, Semaphore>();

  constructor(
    total: number,
    private readonly perTenant: number,
  ) {
    this.shared = new Semaphore(total);
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
      await this.shared.acquire();
      try {
        return await fn();
      } finally {
        this.shared.release();
      }
    } finally {
      tenant.release();
      // Forget idle tenants: the map stays as small as the tenants in flight.
      if (tenant.idle) this.tenants.delete(tenantId);
    }
  }
}
