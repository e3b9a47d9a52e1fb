/** An id due soon, for its shard's sorted set. */
export interface DueEntry {
  tenantId: string;
  taskId: string;
  runAtMs: number;
}

/**
 * The hot tier (Redis sorted sets, one per shard). Adding is idempotent, and
 * losing an add is safe: the pre-loader re-hydrates from Postgres.
 */
export interface HotTier {
  addDue(entries: readonly DueEntry[]): Promise<void>;
  /** False while the connection is down: an add would fail at once, so ingest refuses with 503. */
  isConnected(): boolean;
  ping(): Promise<void>;
  close(): Promise<void>;
}
