/**
 * Hostile schedules to POST /v1/schedules and PATCH /v1/schedules/{id}:
 * cron edge cases (seconds fields, impossible dates such as 30 February,
 * out-of-range and malformed fields, unknown aliases, the H character, huge
 * strings), unknown or malformed time zones, and bad policies. Each must be
 * refused with a 4xx and an error code, nothing may be stored (a refused
 * PATCH leaves its schedule as it was), and valid edge cases — DST gaps and
 * repeats, 29 February, a schedule every second — are accepted with the
 * next occurrence they name. The harness (support/fuzz.ts) seeds the cases
 * from CF_PROPERTY_SEED and prints the command that replays a failing one:
 *
 *   CF_PROPERTY_SEED=<seed> CF_FUZZ_CASE=<index> npx vitest run node/test/integration/fuzz-schedules.test.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiFixture, call, startApiFixture } from "./support/api.js";
import { type FuzzCase, failureMessage, type Rng, runFuzz, storedRows } from "./support/fuzz.js";

const FILE = "node/test/integration/fuzz-schedules.test.ts";
const MAX_BODY_BYTES = 16 * 1024;

let fixture: ApiFixture;
/** The schedule every hostile PATCH aims at. */
let target: string;

beforeAll(async () => {
  fixture = await startApiFixture(
    { maxSingleBodyBytes: MAX_BODY_BYTES, requestTimeoutMs: 5000 },
    { maxPayloadBytes: 1024, ratePerS: 1e9, burst: 1e9 },
  );
  const created = await create({ name: "fuzz.target", expression: "0 3 * * *", type: "cron.fuzz" });
  expect(created.status).toBe(201);
  target = created.body.id;
});

afterAll(async () => {
  await fixture?.stop();
});

const create = (body: unknown) =>
  call(fixture.api.baseUrl, "POST", "/v1/schedules", { key: fixture.tenant.apiKey, body });

const BAD_EXPRESSIONS = [
  // impossible dates
  "0 0 30 2 *",
  "0 0 31 2 *",
  "0 0 31 4 *",
  "0 0 31 2,4,6,9,11 *",
  "0 0 0 30 2 *",
  // out of range, in each field, with and without seconds
  "60 * * * *",
  "0 24 * * *",
  "0 0 0 * *",
  "0 0 32 * *",
  "0 0 * 0 *",
  "0 0 * 13 *",
  "0 0 * * 8",
  "60 * * * * *",
  "-1 * * * *",
  "*/0 * * * *",
  "1-0 * * * *",
  "0 0 * * 8#1",
  "0 0 * * 1#6",
  // wrong shape
  "",
  " ",
  "*",
  "* * * *",
  "* * * * * * *",
  "0 0 1 1 * 2030",
  "@every 1s",
  "@reboot",
  "@yearly *",
  "@",
  "H * * * *",
  "H/5 * * * *",
  "0 0 LW * *",
  "0 0 15W * *",
  "０ * * * *",
  "\u0000 * * * *",
  "* * * * *\u0000",
  "a b c d e",
  "1,,2 * * * *",
  "1-2-3 * * * *",
  "*/ * * * *",
  // huge
  "*".repeat(201),
  `${"0,".repeat(100)}0 * * * *`,
  `${"1-2,".repeat(500)}3 * * * *`,
];
const BAD_ZONES = [
  "Mars/Base",
  "",
  " UTC",
  "UTC ",
  "+02:00",
  "GMT+5",
  "UTC+1",
  "../../etc/passwd",
  "America/New_York\u0000",
  "Europe/Berlin/extra",
  "Factory",
  "a".repeat(65),
  `${"Europe/".repeat(20)}Berlin`,
  "Europe\\Berlin",
  "Ü/Zürich",
  1,
  null,
  [],
  {},
];
const BAD_FIELDS: Record<string, unknown[]> = {
  name: ["", "n".repeat(201), "a\u0000b", "é", 1, null],
  type: ["", "a b", "t".repeat(129), 1, null],
  misfire_policy: ["", "never", "FIRE_ONCE", 1],
  overlap_policy: ["", "queue", 1],
  jitter_ms: [-1, 3_600_001, 1.5, "0"],
  expect_within_ms: [0, -1, 30 * 86_400_000 + 1, "1"],
  max_attempts: [0, 101, "3"],
  timeout_ms: [0, 86_400_001],
  priority: ["urgent", 1],
  paused: ["true", 1],
  payload: ["\u0000", { k: "\ud800" }, "p".repeat(1025)],
  unknown_field: [1],
};

function scheduleCase(rng: Rng, index: number): FuzzCase {
  const base: Record<string, unknown> = {
    name: `fuzz.${index}`,
    expression: "*/5 * * * *",
    type: "cron.fuzz",
  };
  const patch = rng.next() < 0.3;
  const send = (kind: string, body: Record<string, unknown> | string): FuzzCase => ({
    kind: `${patch ? "PATCH" : "POST"} ${kind}`,
    method: patch ? "PATCH" : "POST",
    path: patch ? `/v1/schedules/${target}` : "/v1/schedules",
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  switch (rng.int(6)) {
    case 0:
    case 1:
      return send("bad expression", { ...base, expression: rng.pick(BAD_EXPRESSIONS) });
    case 2: {
      // A valid expression in an unknown zone; DST-heavy expressions among them.
      const expression = rng.pick(["30 2 * * *", "0 * * * *", "15 2 * * *", "*/5 * * * *"]);
      return send("bad time zone", { ...base, expression, time_zone: rng.pick(BAD_ZONES) });
    }
    case 3: {
      const field = rng.pick(Object.keys(BAD_FIELDS));
      return send(`bad ${field}`, { ...base, [field]: rng.pick(BAD_FIELDS[field]!) });
    }
    case 4:
      return send(
        "malformed body",
        rng.pick([
          "",
          "{",
          "null",
          "[]",
          patch ? "{}" : '{"name":"x"}',
          '{"name":"x","expression":1,"type":"t"}',
          '{"name":"x","expression":"* * * * *","type":"t","backoff":{"strategy":"sideways"}}',
          '{"name":"x","expression":"* * * * *","type":"t","backoff":{"base_ms":5000,"max_ms":1000}}',
        ]),
      );
    default: {
      // Reads of the target with bad queries; changes only of schedules that do not exist.
      const read = rng.next() < 0.5;
      return {
        kind: "bad query",
        method: read ? "GET" : rng.pick(["DELETE", "PATCH"]),
        path: read
          ? rng.pick([
              `/v1/schedules/${target}?history=${rng.pick(["-1", "501", "x", "1e3", "%00"])}`,
              `/v1/schedules?limit=${rng.pick(["0", "1001", "x", "-1"])}`,
              "/v1/schedules?cursor=%27",
              "/v1/schedules/x",
            ])
          : rng.pick([
              "/v1/schedules/x",
              "/v1/schedules/%00",
              "/v1/schedules/01a22671-d5ac-7ed8-b442-80a19b2f1155",
            ]),
        ...(!read && { body: '{"paused":true}' }),
      };
    }
  }
}

const scheduleRow = (id: string) =>
  fixture.withDb(
    async (db) => (await db.query("SELECT * FROM schedules WHERE id = $1", [id])).rows[0],
  );

describe("fuzz: schedules", () => {
  it("refuses 1,500 bad crons, zones and schedules with 4xx, stores nothing, and keeps serving", async () => {
    const [before, targetBefore] = [await storedRows(fixture.withDb), await scheduleRow(target)];
    const run = await runFuzz({
      file: FILE,
      target: {
        baseUrl: fixture.api.baseUrl,
        apiKey: fixture.tenant.apiKey,
        limitOf: () => MAX_BODY_BYTES,
      },
      count: 1500,
      generate: scheduleCase,
    });
    expect(run.failures.slice(0, 10), failureMessage(run)).toEqual([]);
    expect(await storedRows(fixture.withDb), "rows written by refused requests").toEqual(before);
    expect(await scheduleRow(target), "a refused PATCH changed its schedule").toEqual(targetBefore);
    const ok = await create({ name: "fuzz.after", expression: "0 4 * * *", type: "cron.fuzz" });
    expect(ok.status).toBe(201);
  }, 600_000);

  it("accepts the valid edge cases with the next occurrence they name", async () => {
    const cases: Array<[string, string, (nextMs: number, createdMs: number) => boolean]> = [
      // Every second (documented): due within a second of its creation.
      ["* * * * * *", "UTC", (next, at) => next > at && next <= at + 1000],
      ["@secondly", "Europe/Berlin", (next, at) => next > at && next <= at + 1000],
      // 29 February only: in a leap year, at midnight UTC.
      [
        "0 0 29 2 *",
        "UTC",
        (next) => new Date(next).toISOString().slice(4) === "-02-29T00:00:00.000Z",
      ],
      ["0 0 L 2 *", "UTC", (next) => [28, 29].includes(new Date(next).getUTCDate())],
      // New York's spring gap (02:30 does not exist on that day) and autumn repeat (01:30 twice):
      // every day at those local times, the next is at 02:30 or 01:30 local (or 03:00 on the gap day).
      ["30 2 * * *", "America/New_York", (next) => [6, 7].includes(new Date(next).getUTCHours())],
      ["30 1 * * *", "America/New_York", (next) => [5, 6].includes(new Date(next).getUTCHours())],
      // Lord Howe shifts by half an hour.
      ["15 2 * * *", "Australia/Lord_Howe", (next) => new Date(next).getUTCMinutes() % 15 === 0],
      // Seconds field, and a zone spelled in a link's name.
      ["59 59 23 31 12 *", "US/Eastern", (next) => new Date(next).getUTCMonth() <= 11],
      [
        "0 0 1 1 *",
        "utc",
        (next) => new Date(next).toISOString().slice(4) === "-01-01T00:00:00.000Z",
      ],
    ];
    const results = [];
    for (const [index, [expression, zone, check]] of cases.entries()) {
      const answer = await create({
        name: `edge.${index}`,
        expression,
        time_zone: zone,
        type: "cron.fuzz",
      });
      const nextMs = Date.parse(answer.body.next_occurrence_at);
      const createdMs = Date.parse(answer.body.created_at);
      const stored = answer.status === 201 ? await scheduleRow(answer.body.id) : null;
      results.push({
        expression,
        zone,
        status: answer.status,
        next: answer.body.next_occurrence_at,
        holds: answer.status === 201 && check(nextMs, createdMs),
        stored: stored?.expression === expression && stored?.time_zone === zone,
      });
    }
    expect(results.filter((r) => r.status !== 201 || !r.holds || !r.stored)).toEqual([]);
  }, 120_000);
});
