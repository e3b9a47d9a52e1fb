/**
 * Next-fire computation across time zones and both daylight-saving
 * transitions. Instants are written in UTC with the local time beside them.
 * 2026 transitions: New York 8 Mar 02:00 EST→03:00 EDT and 1 Nov 02:00
 * EDT→01:00 EST; Berlin 29 Mar 02:00→03:00 and 25 Oct 03:00→02:00; Lord Howe
 * (30-minute DST) 5 Apr 02:00→01:30 and 4 Oct 02:00→02:30; Kolkata none.
 */
import { CronExpressionParser } from "cron-parser";
import { describe, expect, it } from "vitest";
import { CronSchedule, validTimeZone } from "../../../src/domain/cron.js";
import { ChronofenceError } from "../../../src/domain/errors.js";

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

function firstN(expression: string, zone: string, fromIso: string, n: number): string[] {
  const schedule = CronSchedule.parse(expression, zone);
  const out: string[] = [];
  let cursor = at(fromIso);
  for (let i = 0; i < n; i++) {
    const next = schedule.nextAfter(cursor);
    if (next === null) break;
    out.push(iso(next));
    cursor = next;
  }
  return out;
}

describe("parsing", () => {
  it("accepts 5 and 6 fields and every alias", () => {
    expect(firstN("*/10 * * * * *", "UTC", "2026-01-01T00:00:00Z", 2)).toEqual([
      "2026-01-01T00:00:10.000Z",
      "2026-01-01T00:00:20.000Z",
    ]);
    expect(firstN("@hourly", "UTC", "2026-01-01T00:30:00Z", 1)).toEqual([
      "2026-01-01T01:00:00.000Z",
    ]);
    expect(firstN("@midnight", "Europe/Berlin", "2026-01-01T12:00:00Z", 1)).toEqual([
      "2026-01-01T23:00:00.000Z",
    ]);
    expect(firstN("@annually", "UTC", "2026-03-01T00:00:00Z", 1)).toEqual([
      "2027-01-01T00:00:00.000Z",
    ]);
    for (const alias of ["@yearly", "@monthly", "@weekly", "@daily", "@minutely", "@secondly"]) {
      expect(CronSchedule.parse(alias, "UTC").nextAfter(0)).not.toBeNull();
    }
  });

  it.each([
    ["", /empty/],
    ["* * * *", /5 fields .* or 6/],
    ["* * * * * * *", /got 7/],
    ["61 * * * *", /invalid cron expression: .*61/],
    ["0 0 30 2 *", /invalid cron expression/],
    ["@fortnightly", /unknown cron alias/],
    ["H * * * *", /H \(hash\)/],
    ["x".repeat(201), /longer than 200/],
  ])("rejects %j with a clear 422 message", (expression, message) => {
    let caught: unknown;
    try {
      CronSchedule.parse(expression, "UTC");
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ChronofenceError);
    expect((caught as ChronofenceError).code).toBe("unprocessable");
    expect((caught as ChronofenceError).message).toMatch(message);
    expect((caught as ChronofenceError).details).toMatchObject({ field: "expression" });
  });

  it("accepts day names that contain an H (THU) but not the hash character", () => {
    expect(firstN("0 9 * * THU", "UTC", "2026-01-01T00:00:00Z", 1)).toEqual([
      "2026-01-01T09:00:00.000Z",
    ]);
  });

  it("validates time zones, keeping the spelling given (ICU would say Asia/Calcutta)", () => {
    expect(validTimeZone("Europe/Berlin")).toBe("Europe/Berlin");
    expect(validTimeZone("Asia/Kolkata")).toBe("Asia/Kolkata");
    expect(validTimeZone("US/Eastern")).toBe("US/Eastern");
    expect(validTimeZone("america/new_york")).toBe("america/new_york");
    expect(validTimeZone("UTC")).toBe("UTC");
    for (const bad of ["Mars/Base", "+05:30", "", "Europe/Berlin; DROP", "x".repeat(80)]) {
      expect(() => validTimeZone(bad)).toThrow(/unknown time zone/);
    }
  });
});

describe("time zones without DST changes", () => {
  it("Asia/Kolkata (+05:30) fires at local midnight", () => {
    expect(firstN("0 0 * * *", "Asia/Kolkata", "2026-10-03T00:00:00Z", 2)).toEqual([
      "2026-10-03T18:30:00.000Z",
      "2026-10-04T18:30:00.000Z",
    ]);
  });

  it("is strictly after the given instant, to the millisecond", () => {
    const s = CronSchedule.parse("0 * * * *", "UTC");
    expect(iso(s.nextAfter(at("2026-01-01T01:00:00Z") - 1)!)).toBe("2026-01-01T01:00:00.000Z");
    expect(iso(s.nextAfter(at("2026-01-01T01:00:00Z"))!)).toBe("2026-01-01T02:00:00.000Z");
  });
});

describe("spring-forward gap: a clock-bound time fires once at the first instant after the gap", () => {
  it("America/New_York 02:30 → 03:00 EDT, and 02:30 the next day as usual", () => {
    expect(firstN("30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 2)).toEqual([
      "2026-03-08T07:00:00.000Z", // 03:00 EDT
      "2026-03-09T06:30:00.000Z", // 02:30 EDT
    ]);
  });

  it("Europe/Berlin 02:30 → 03:00 CEST", () => {
    expect(firstN("30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 2)).toEqual([
      "2026-03-29T01:00:00.000Z", // 03:00 CEST
      "2026-03-30T00:30:00.000Z",
    ]);
  });

  it("Australia/Lord_Howe's 30-minute gap: 02:15 → 02:30 (+11)", () => {
    expect(firstN("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z", 2)).toEqual([
      "2026-10-03T15:30:00.000Z", // 02:30 +11 on 4 Oct
      "2026-10-04T15:15:00.000Z", // 02:15 +11 on 5 Oct
    ]);
  });

  it("several skipped times in one gap fire once, also when 03:00 itself matches", () => {
    expect(firstN("0,20,40 2,3 * * *", "America/New_York", "2026-03-08T05:00:00Z", 4)).toEqual([
      "2026-03-08T07:00:00.000Z", // 02:00, 02:20, 02:40 and 03:00 → once at 03:00 EDT
      "2026-03-08T07:20:00.000Z",
      "2026-03-08T07:40:00.000Z",
      "2026-03-09T06:00:00.000Z",
    ]);
  });

  it("an every-hour expression follows elapsed time: skipped times do not exist", () => {
    expect(firstN("*/30 * * * *", "America/New_York", "2026-03-08T06:15:00Z", 3)).toEqual([
      "2026-03-08T06:30:00.000Z", // 01:30 EST
      "2026-03-08T07:00:00.000Z", // 03:00 EDT
      "2026-03-08T07:30:00.000Z",
    ]);
  });

  it("differs from cron-parser's own zone handling, which this module wraps", () => {
    const viaLibrary = (expression: string, tz: string, from: string) =>
      CronExpressionParser.parse(expression, { tz, currentDate: new Date(from) })
        .next()
        .toISOString();
    // cron-parser shifts by the gap in New York (03:30) and drops the run in Lord Howe.
    expect(viaLibrary("30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z")).toBe(
      "2026-03-08T07:30:00.000Z",
    );
    expect(viaLibrary("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z")).toBe(
      "2026-10-04T15:15:00.000Z",
    );
  });
});

describe("fall-back repeat: a clock-bound time fires once, at its first occurrence", () => {
  it("America/New_York 01:30 fires at 01:30 EDT only", () => {
    expect(firstN("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 2)).toEqual([
      "2026-11-01T05:30:00.000Z", // 01:30 EDT (the 01:30 EST an hour later does not fire)
      "2026-11-02T06:30:00.000Z",
    ]);
  });

  it("starting inside the second pass does not fire the repeated time again", () => {
    // 06:15Z is 01:15 EST, after 01:30 EDT already happened.
    expect(firstN("30 1 * * *", "America/New_York", "2026-11-01T06:15:00Z", 1)).toEqual([
      "2026-11-02T06:30:00.000Z",
    ]);
    expect(firstN("* 1 * * *", "America/New_York", "2026-11-01T06:15:00Z", 1)).toEqual([
      "2026-11-02T06:00:00.000Z",
    ]);
  });

  it("Europe/Berlin 02:30 fires at 02:30 CEST only", () => {
    expect(firstN("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 2)).toEqual([
      "2026-10-25T00:30:00.000Z",
      "2026-10-26T01:30:00.000Z",
    ]);
  });

  it("Australia/Lord_Howe's 30-minute repeat: 01:45 fires at 01:45 (+11) only", () => {
    expect(firstN("45 1 * * *", "Australia/Lord_Howe", "2026-04-04T00:00:00Z", 2)).toEqual([
      "2026-04-04T14:45:00.000Z",
      "2026-04-05T15:15:00.000Z",
    ]);
  });

  it("an every-hour expression follows elapsed time: the repeated hour fires twice", () => {
    expect(firstN("*/30 * * * *", "America/New_York", "2026-11-01T04:45:00Z", 5)).toEqual([
      "2026-11-01T05:00:00.000Z", // 01:00 EDT
      "2026-11-01T05:30:00.000Z", // 01:30 EDT
      "2026-11-01T06:00:00.000Z", // 01:00 EST
      "2026-11-01T06:30:00.000Z", // 01:30 EST
      "2026-11-01T07:00:00.000Z", // 02:00 EST
    ]);
  });
});

describe("between", () => {
  it("lists occurrences in (after, until], capped", () => {
    const s = CronSchedule.parse("*/15 * * * *", "UTC");
    const from = at("2026-01-01T00:00:00Z");
    expect(s.between(from, from + 3_600_000, 10).map(iso)).toEqual([
      "2026-01-01T00:15:00.000Z",
      "2026-01-01T00:30:00.000Z",
      "2026-01-01T00:45:00.000Z",
      "2026-01-01T01:00:00.000Z",
    ]);
    expect(s.between(from, from + 3_600_000, 2)).toHaveLength(2);
  });
});
