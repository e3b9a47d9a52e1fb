/** What the ingest path reports; the metrics adapter turns it into Prometheus series. */
export interface IngestMetrics {
  groupCommit(rows: number, durationMs: number, ok: boolean): void;
  rateLimited(tasks: number): void;
  hotTierAdded(entries: number, ok: boolean): void;
}

export const noIngestMetrics: IngestMetrics = {
  groupCommit: () => undefined,
  rateLimited: () => undefined,
  hotTierAdded: () => undefined,
};
