/**
 * What the reconciler did lately, for its node's report (the cluster page):
 * runs since the node started, when it last ran, totals, and the last run
 * that repaired anything. In memory, fed by the reconcile loop.
 */
export interface ReconcileCounts {
  claimsReturned: number;
  rearmed: number;
  leasesExpired: number;
  rehydrated: number;
}

export class ReconcilerActivity {
  private runs = 0;
  private lastRunAtMs: number | null = null;
  private lastRepairAtMs: number | null = null;
  private lastRepair: ReconcileCounts | null = null;
  private readonly totals: ReconcileCounts = {
    claimsReturned: 0,
    rearmed: 0,
    leasesExpired: 0,
    rehydrated: 0,
  };

  ran(report: ReconcileCounts, atMs: number): void {
    this.runs++;
    this.lastRunAtMs = atMs;
    for (const key of Object.keys(this.totals) as Array<keyof ReconcileCounts>)
      this.totals[key] += report[key];
    if (report.claimsReturned + report.rearmed + report.leasesExpired + report.rehydrated > 0) {
      this.lastRepairAtMs = atMs;
      this.lastRepair = { ...report };
    }
  }

  describe(): Record<string, unknown> {
    return {
      runs: this.runs,
      last_run_at_ms: this.lastRunAtMs,
      totals: {
        claims_returned: this.totals.claimsReturned,
        rearmed: this.totals.rearmed,
        leases_expired: this.totals.leasesExpired,
        rehydrated: this.totals.rehydrated,
      },
      last_repair_at_ms: this.lastRepairAtMs,
      last_repair: this.lastRepair && {
        claims_returned: this.lastRepair.claimsReturned,
        rearmed: this.lastRepair.rearmed,
        leases_expired: this.lastRepair.leasesExpired,
        rehydrated: this.lastRepair.rehydrated,
      },
    };
  }
}
