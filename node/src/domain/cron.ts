/**
 * Cron schedules: which instants a cron expression names in an IANA time
 * zone, including across daylight-saving changes.
 *
 * Expressions have 5 fields (minute hour day-of-month month day-of-week) or
 * 6 (a leading seconds field), or are one of the aliases @yearly (@annually),
 * @monthly, @weekly, @daily (@midnight), @hourly, @minutely, @secondly,
 * @weekdays, @weekends. cron-parser matches them — on wall-clock times only:
 * it runs in UTC on "wall times" (see time-zone.ts), and this module alone
 * decides how wall times become instants. cron-parser's own zone handling
 * is not used because its DST behaviour is not one policy: in a New York
 * spring-forward gap it moves 02:30 to 03:30, in Lord Howe's half-hour gap
 * it drops 02:15 altogether (both measured, see the unit test).
 *
 * The daylight-saving policy (Vixie cron's, which Quartz and Temporal users
 * also meet in practice):
 *
 *  - An expression whose hour field names specific hours ("30 2 * * *",
 *    "0 9-17 * * *") fires on the local clock, once per local time:
 *      gap    — a time the clocks skip (02:30 when 02:00 jumps to 03:00)
 *               fires once, at the first instant after the gap (03:00);
 *               several skipped times in one gap fire once together;
 *      repeat — a time the clocks show twice (01:30 when 02:00 falls back
 *               to 01:00) fires once, at its first occurrence.
 *  - An expression whose hour field is every hour ("*\/15 * * * *",
 *    "0 * * * *") follows elapsed time: times in a gap do not exist and do
 *    not fire; times in a repeated hour fire in both passes.
 *
 * Offset changes are assumed at least a few hours apart (true of every zone
 * in the tz database).
 */
import { CronExpressionParser } from "cron-parser";
import { ChronofenceError, ErrorCode } from "./errors.js";
import { isKnownTimeZone, offsetMsAt } from "./time-zone.js";

type Matcher = ReturnType<typeof CronExpressionParser.parse>;

export const MAX_CRON_EXPRESSION_LENGTH = 200;

const ALIASES: Readonly<Record<string, string>> = {
  "@yearly": "@yearly",
  "@annually": "@yearly",
  "@monthly": "@monthly",
  "@weekly": "@weekly",
  "@daily": "@daily",
  "@midnight": "@daily",
  "@hourly": "@hourly",
  "@minutely": "@minutely",
  "@secondly": "@secondly",
  "@weekdays": "@weekdays",
  "@weekends": "@weekends",
};

/** Longest DST shift in the tz database is 2 h (Antarctica/Troll); look back a little further. */
const REPEAT_LOOKBACK_MS = 3 * 3_600_000;
const WALK_LIMIT = 16;

const invalid = (message: string, details: Record<string, unknown> = {}) =>
  new ChronofenceError(ErrorCode.Unprocessable, message, { details });

function matcherOf(expression: string): Matcher {
  const text = expression.trim();
  if (text === "") throw invalid("cron expression is empty", { field: "expression" });
  if (text.length > MAX_CRON_EXPRESSION_LENGTH) {
    throw invalid(`cron expression is longer than ${MAX_CRON_EXPRESSION_LENGTH} characters`, {
      field: "expression",
    });
  }
  let source = text;
  if (text.startsWith("@")) {
    const alias = ALIASES[text.toLowerCase()];
    if (alias === undefined) {
      throw invalid(`unknown cron alias ${text}`, {
        field: "expression",
        aliases: Object.keys(ALIASES),
      });
    }
    source = alias;
  } else {
    const fields = text.split(/\s+/);
    if (fields.length !== 5 && fields.length !== 6) {
      throw invalid(
        `a cron expression has 5 fields (minute hour day month weekday) or 6 (seconds first), got ${fields.length}`,
        { field: "expression" },
      );
    }
    // `H` picks a random value per parse: two planners would disagree.
    if (fields.some((f) => f.split(",").some((part) => /^H(\(|\/|$)/i.test(part)))) {
      throw invalid("the H (hash) cron character is not supported; use jitter_ms to spread runs", {
        field: "expression",
      });
    }
  }
  try {
    return CronExpressionParser.parse(source, { tz: "UTC", currentDate: 0 });
  } catch (error) {
    throw invalid(`invalid cron expression: ${(error as Error).message}`, {
      field: "expression",
    });
  }
}

/** Validates an IANA zone name, returning it as given. */
export function validTimeZone(zone: string): string {
  if (!isKnownTimeZone(zone)) {
    throw invalid(`unknown time zone ${JSON.stringify(zone.slice(0, 64))}; use an IANA name`, {
      field: "time_zone",
      example: "Europe/Berlin",
    });
  }
  return zone;
}

export class CronSchedule {
  /** True when the hour field is every hour: DST-wise it follows elapsed time. */
  readonly followsElapsedTime: boolean;

  private constructor(
    private readonly matcher: Matcher,
    readonly zone: string,
  ) {
    this.followsElapsedTime = matcher.fields.hour.values.length === 24;
  }

  /** Throws a 422-coded ChronofenceError naming the field for a bad expression or zone. */
  static parse(expression: string, timeZone: string): CronSchedule {
    const matcher = matcherOf(expression);
    return new CronSchedule(matcher, validTimeZone(timeZone));
  }

  /** The first occurrence strictly after `afterMs`, or null if there is none. */
  nextAfter(afterMs: number): number | null {
    let segmentOffsetMs = offsetMsAt(this.zone, afterMs);
    let lowerMs = afterMs;
    let wallFloorMs = this.initialWallFloor(afterMs, segmentOffsetMs);
    // Each pass either returns or crosses one offset change.
    for (let pass = 0; pass < WALK_LIMIT; pass++) {
      const wallMs = this.nextWallAfter(wallFloorMs);
      if (wallMs === null) return null;
      const candidateMs = wallMs - segmentOffsetMs;
      if (offsetMsAt(this.zone, candidateMs) === segmentOffsetMs) return candidateMs;
      const changeMs = firstChange(this.zone, lowerMs, candidateMs, segmentOffsetMs);
      const nextOffsetMs = offsetMsAt(this.zone, changeMs);
      const gap = nextOffsetMs > segmentOffsetMs;
      if (gap && !this.followsElapsedTime) {
        const inGap = this.nextWallAfter(changeMs + segmentOffsetMs - 1);
        if (inGap !== null && inGap < changeMs + nextOffsetMs) return changeMs;
      }
      // Past a fall-back, a clock-bound expression resumes after the repeated times.
      wallFloorMs =
        !gap && !this.followsElapsedTime
          ? changeMs + segmentOffsetMs - 1
          : changeMs + nextOffsetMs - 1;
      lowerMs = changeMs;
      segmentOffsetMs = nextOffsetMs;
    }
    return null;
  }

  /** Occurrences in (afterMs, untilMs], ascending, at most `limit`. */
  between(afterMs: number, untilMs: number, limit: number): number[] {
    const found: number[] = [];
    let cursorMs = afterMs;
    while (found.length < limit) {
      const next = this.nextAfter(cursorMs);
      if (next === null || next > untilMs) break;
      found.push(next);
      cursorMs = next;
    }
    return found;
  }

  /**
   * Where wall-clock matching starts for occurrences after `afterMs`: its
   * wall time, unless `afterMs` is in the second pass of a repeated hour and
   * the expression is clock-bound, whose repeated times already fired.
   */
  private initialWallFloor(afterMs: number, offsetMs: number): number {
    const wallMs = afterMs + offsetMs;
    if (this.followsElapsedTime) return wallMs;
    const earlierOffsetMs = offsetMsAt(this.zone, afterMs - REPEAT_LOOKBACK_MS);
    if (earlierOffsetMs <= offsetMs) return wallMs;
    const changeMs = firstChange(this.zone, afterMs - REPEAT_LOOKBACK_MS, afterMs, earlierOffsetMs);
    return Math.max(wallMs, changeMs + earlierOffsetMs - 1);
  }

  private nextWallAfter(wallMs: number): number | null {
    try {
      this.matcher.reset(new Date(wallMs));
      return this.matcher.next().getTime();
    } catch {
      return null; // cron-parser's loop limit: nothing matches within its search
    }
  }
}

/**
 * The first whole second in (fromMs, toMs] whose offset is not `offsetMs`,
 * by bisection; the offset at `fromMs` must be `offsetMs`.
 */
function firstChange(zone: string, fromMs: number, toMs: number, offsetMs: number): number {
  let lowMs = Math.floor(fromMs / 1000) * 1000;
  let highMs = Math.ceil(toMs / 1000) * 1000;
  while (highMs - lowMs > 1000) {
    const midMs = lowMs + Math.floor((highMs - lowMs) / 2000) * 1000;
    if (offsetMsAt(zone, midMs) === offsetMs) lowMs = midMs;
    else highMs = midMs;
  }
  return highMs;
}
