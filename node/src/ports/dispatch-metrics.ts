/** What the dispatcher roles report; the metrics adapter turns it into Prometheus series. */
export interface DispatchMetrics {
  claimed(shard: number, count: number): void;
  armed(shard: number, count: number): void;
  staleEpochRejected(shard: number, claims: number, where: "db" | "local"): void;
  published(kind: string, latenessMs: number): void;
  overdue(): void;
  publishFailed(count: number): void;
  /** Tasks buried because the broker can never accept their envelope (DEAD, undeliverable). */
  undeliverable(count: number): void;
  cancelledDropped(count: number): void;
  wheelSize(shard: number, size: number): void;
  leaseAcquired(name: string): void;
  leaseLost(name: string): void;
  leaseReleased(name: string): void;
  rearmed(count: number): void;
  /** RUNNING tasks whose execution lease expired, failed by the reconciler: retried or dead. */
  leasesExpired(retried: number, dead: number): void;
  rehydrated(count: number): void;
  claimsReturned(count: number): void;
  preloaded(count: number): void;
}

export const noDispatchMetrics: DispatchMetrics = {
  claimed: () => undefined,
  armed: () => undefined,
  staleEpochRejected: () => undefined,
  published: () => undefined,
  overdue: () => undefined,
  publishFailed: () => undefined,
  undeliverable: () => undefined,
  cancelledDropped: () => undefined,
  wheelSize: () => undefined,
  leaseAcquired: () => undefined,
  leaseLost: () => undefined,
  leaseReleased: () => undefined,
  rearmed: () => undefined,
  leasesExpired: () => undefined,
  rehydrated: () => undefined,
  claimsReturned: () => undefined,
  preloaded: () => undefined,
};
