/**
 * IANA time zones without a time-zone library: Intl (ICU, built into Node)
 * answers "what wall-clock time is instant t in zone z", and offsets (hence
 * daylight-saving changes, found by cron.ts) derive from that one question.
 *
 * A "wall time" here is a local date and time encoded as if it were UTC:
 * 2026-03-08 02:30 in New York is Date.UTC(2026, 2, 8, 2, 30). Arithmetic on
 * wall times is plain arithmetic, and cron matching on them is matching in UTC.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(zone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(zone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(zone, formatter);
  }
  return formatter;
}

/** Named zones only ("Europe/Berlin", "UTC"): no bare offsets, no empty string. */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;

/**
 * True when ICU knows `zone` (any case, links such as "US/Eastern" too).
 * Callers keep the spelling they were given: ICU's own canonical names are
 * dated ("Asia/Kolkata" resolves to "Asia/Calcutta").
 */
export function isKnownTimeZone(zone: string): boolean {
  if (zone.length > 64 || !ZONE_NAME.test(zone)) return false;
  try {
    formatterOf(zone);
    return true;
  } catch {
    return false;
  }
}

/** The wall time (see header) of `instantMs` in `zone`, to the millisecond. */
export function wallTimeOf(zone: string, instantMs: number): number {
  const wholeSecondMs = Math.floor(instantMs / 1000) * 1000;
  const parts = formatterOf(zone).formatToParts(wholeSecondMs);
  const field = (type: Intl.DateTimeFormatPartTypes): number =>
    Number(parts.find((p) => p.type === type)!.value);
  const wall = Date.UTC(
    field("year"),
    field("month") - 1,
    field("day"),
    field("hour"),
    field("minute"),
    field("second"),
  );
  return wall + (instantMs - wholeSecondMs);
}

/** UTC offset of `zone` at `instantMs` (wall − instant), in ms. */
export const offsetMsAt = (zone: string, instantMs: number): number =>
  wallTimeOf(zone, instantMs) - instantMs;
