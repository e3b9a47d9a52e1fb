/**
 * Bounds a label's values: the first `maxValues` distinct values are kept as
 * they are, every later one is reported as "other". Tenant ids and task
 * types come from tenants, so without a cap each new one would add series to
 * every scrape for the life of the process. A value keeps its label once it
 * has one (a gauge's +1 and -1 land on the same series).
 */
export const OTHER = "other";

export class LabelCap {
  private readonly known = new Set<string>();

  constructor(private readonly maxValues: number) {}

  of(value: string): string {
    if (this.known.has(value)) return value;
    if (this.known.size >= this.maxValues) return OTHER;
    this.known.add(value);
    return value;
  }
}
