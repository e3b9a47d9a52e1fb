/**
 * Epoch milliseconds ↔ Postgres time, in one place. Every instant crosses
 * the wire as epoch ms from the injected clock (a float8 parameter, a whole
 * number in practice) and comes back as float8 epoch ms: Node never parses
 * timestamptz text. Each conversion below keeps the exact semantics of the
 * statements that use it; where two spellings round differently they stay
 * two named helpers.
 *
 * SQL fragments, for sql/*.ts. An argument is one operand: a parameter, a
 * column, a cast, or a parenthesised expression.
 *  - sqlTimestamptz(ms): `timestamptz 'epoch' + ms * interval '1 millisecond'`.
 *    An untyped parameter is inferred float8. Exact for whole ms.
 *  - sqlTimestamptzViaSeconds(ms): `to_timestamp(ms / 1000.0)`, the tenant
 *    statements' spelling. The parameter is inferred numeric and rounded to
 *    the microsecond through float8 seconds: the same instant as
 *    sqlTimestamptz for whole ms, but a sub-microsecond fraction can land 1 µs
 *    apart (1700000000123.0006 ms gives …123001 here, …123000 there), and
 *    'Infinity' gives infinity here, an error there.
 *  - sqlEpochMs(ts): `(extract(epoch FROM ts) * 1000)::float8`, every read.
 *
 * TypeScript conversions:
 *  - roundMs / roundMsOrNull: a float8 *_ms column to whole ms, half up
 *    (Math.round): what readers of row times use, except
 *  - exactMs: a lease's expiry, kept as read (no rounding).
 *  - isoOfMs: ms → ISO-8601 text (Date#toISOString, ms precision, fraction
 *    truncated), for `$n::timestamptz` parameters: a plain constant lets the
 *    planner prune partitions. Throws RangeError outside the Date range.
 *  - dateOfMs: ms → Date, which node-pg sends as local time with its offset
 *    (the same instant to the ms); outside the Date range Postgres refuses it.
 *  - utcDayOfMs: ms → `YYYY-MM-DD` of its UTC day (partition maintenance).
 *  - isDateMs: whether ms is an instant a Date can hold.
 */

/** SQL: epoch ms → timestamptz, by interval arithmetic (float8 parameter). */
export const sqlTimestamptz = (ms: string): string =>
  `timestamptz 'epoch' + ${ms} * interval '1 millisecond'`;

/** SQL: epoch ms → timestamptz via to_timestamp (numeric parameter; rounds as described above). */
export const sqlTimestamptzViaSeconds = (ms: string): string => `to_timestamp(${ms} / 1000.0)`;

/** SQL: timestamptz → epoch ms, float8 (exact to the microsecond). */
export const sqlEpochMs = (ts: string): string => `(extract(epoch FROM ${ts}) * 1000)::float8`;

/** A float8 epoch-ms column (sqlEpochMs) as whole ms, half up. */
export const roundMs = (rowMs: number): number => Math.round(rowMs);

export const roundMsOrNull = (rowMs: number | null): number | null =>
  rowMs === null ? null : Math.round(rowMs);

/** A float8 epoch-ms column as read, fraction included. */
export const exactMs = (rowMs: number): number => Number(rowMs);

/** Exact to the millisecond, which is all a run_at holds (it comes from epoch ms). */
export const isoOfMs = (epochMs: number): string => new Date(epochMs).toISOString();

export const dateOfMs = (epochMs: number): Date => new Date(epochMs);

export const utcDayOfMs = (epochMs: number): string => new Date(epochMs).toISOString().slice(0, 10);

export const DAY_MS = 86_400_000;

/** The start of the UTC day of `epochMs`, in epoch ms: where its task partition begins. */
export const utcDayStartMs = (epochMs: number): number => Math.floor(epochMs / DAY_MS) * DAY_MS;

export const isDateMs = (epochMs: number): boolean => !Number.isNaN(new Date(epochMs).getTime());
