/**
 * The schedule endpoints on the real API, Postgres and Redis: validation
 * (bad cron, bad zone → 422 with a clear message; unknown fields → 400),
 * create/list/get/patch/delete, audit rows, and tenant isolation.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { main } from "../../src/main/cli.js";
import {
  type ApiFixture,
  call,
  newTenant,
  startApiFixture,
  type TestTenant,
} from "./support/api.js";
import { withPg } from "./support/services.js";

let fixture: ApiFixture;
let other: TestTenant;

beforeAll(async () => {
  fixture = await startApiFixture();
  other = await newTenant(fixture.config);
});
afterAll(async () => {
  await fixture?.stop();
});

const api = (method: string, path: string, body?: unknown, key = fixture.tenant.apiKey) =>
  call(fixture.api.baseUrl, method, path, body === undefined ? { key } : { key, body });

const base = {
  name: "nightly",
  expression: "0 3 * * *",
  time_zone: "Europe/Berlin",
  type: "report",
};

describe("validation", () => {
  it.each([
    [{ ...base, expression: "61 * * * *" }, /invalid cron expression: .*61/, "expression"],
    [{ ...base, expression: "* * * *" }, /5 fields/, "expression"],
    [{ ...base, expression: "@fortnightly" }, /unknown cron alias/, "expression"],
    [{ ...base, time_zone: "Mars/Olympus_Mons" }, /unknown time zone/, "time_zone"],
    [{ ...base, time_zone: "+02:00" }, /unknown time zone/, "time_zone"],
  ])("422 for %j", async (body, message, field) => {
    const answer = await api("POST", "/v1/schedules", body);
    expect(answer.status).toBe(422);
    expect(answer.body.error.code).toBe("unprocessable");
    expect(answer.body.error.message).toMatch(message);
    expect(answer.body.error.details.field).toBe(field);
  });

  it("422 for out-of-range settings, naming the field", async () => {
    const answer = await api("POST", "/v1/schedules", {
      ...base,
      misfire_policy: "sometimes",
      jitter_ms: -1,
    });
    expect(answer.status).toBe(422);
    const paths = answer.body.error.details.issues.map((i: { path: string }) => i.path);
    expect(paths).toEqual(expect.arrayContaining(["misfire_policy", "jitter_ms"]));
  });

  it("400 for unknown fields, wrong types and bad JSON; 401 without a key", async () => {
    expect((await api("POST", "/v1/schedules", { ...base, cron: "x" })).status).toBe(400);
    expect((await api("POST", "/v1/schedules", { ...base, expression: 5 })).status).toBe(400);
    const raw = await call(fixture.api.baseUrl, "POST", "/v1/schedules", {
      key: fixture.tenant.apiKey,
      rawBody: "{",
    });
    expect(raw.status).toBe(400);
    expect((await api("POST", "/v1/schedules", base, "cf_bad")).status).toBe(401);
  });
});

describe("lifecycle", () => {
  it("creates, lists, reads, pauses, resumes, edits and deletes a schedule", async () => {
    const created = await api("POST", "/v1/schedules", {
      ...base,
      name: "lifecycle",
      time_zone: "America/New_York",
      payload: { report: "daily" },
      jitter_ms: 500,
      expect_within_ms: 60_000,
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: "lifecycle",
      time_zone: "America/New_York",
      misfire_policy: "fire_once",
      overlap_policy: "allow",
      paused: false,
      payload: { report: "daily" },
    });
    const id = created.body.id as string;
    // 03:00 in New York is 07:00Z or 08:00Z depending on DST.
    expect(created.body.next_occurrence_at).toMatch(/T0[78]:00:00\.000Z$/);

    const duplicate = await api("POST", "/v1/schedules", { ...base, name: "lifecycle" });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.error.code).toBe("name_taken");

    const listed = await api("GET", "/v1/schedules?limit=1000");
    expect(listed.body.schedules.map((s: { id: string }) => s.id)).toContain(id);

    const read = await api("GET", `/v1/schedules/${id}`);
    expect(read.status).toBe(200);
    expect(read.body.history).toEqual([]);

    const paused = await api("PATCH", `/v1/schedules/${id}`, { paused: true });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ paused: true, next_occurrence_at: null });
    const resumed = await api("PATCH", `/v1/schedules/${id}`, { paused: false });
    expect(resumed.body.paused).toBe(false);

    const edited = await api("PATCH", `/v1/schedules/${id}`, {
      expression: "*/5 * * * * *",
      time_zone: "UTC",
    });
    expect(edited.status).toBe(200);
    expect(edited.body.expression).toBe("*/5 * * * * *");

    const badEdit = await api("PATCH", `/v1/schedules/${id}`, { time_zone: "Nowhere/City" });
    expect(badEdit.status).toBe(422);
    expect((await api("PATCH", `/v1/schedules/${id}`, {})).status).toBe(422);

    const deleted = await api("DELETE", `/v1/schedules/${id}`);
    expect(deleted.status).toBe(200);
    expect((await api("GET", `/v1/schedules/${id}`)).status).toBe(404);
    expect((await api("DELETE", `/v1/schedules/${id}`)).status).toBe(404);

    const audit = await withPg(fixture.db.url, (c) =>
      c.query("SELECT action FROM audit_log WHERE details->>'schedule_id' = $1 ORDER BY id", [id]),
    );
    expect(audit.rows.map((r) => r.action)).toEqual([
      "schedule.create",
      "schedule.update",
      "schedule.update",
      "schedule.update",
      "schedule.delete",
    ]);
  });

  it("a malformed id is 404, like an unknown one", async () => {
    expect((await api("GET", "/v1/schedules/not-a-uuid")).status).toBe(404);
    expect((await api("PATCH", "/v1/schedules/not-a-uuid", { paused: true })).status).toBe(404);
  });
});

describe("tenant isolation", () => {
  it("another tenant neither sees nor changes a schedule", async () => {
    const created = await api("POST", "/v1/schedules", { ...base, name: "mine" });
    const id = created.body.id as string;
    expect((await api("GET", `/v1/schedules/${id}`, undefined, other.apiKey)).status).toBe(404);
    expect((await api("PATCH", `/v1/schedules/${id}`, { paused: true }, other.apiKey)).status).toBe(
      404,
    );
    expect((await api("DELETE", `/v1/schedules/${id}`, undefined, other.apiKey)).status).toBe(404);
    const theirs = await api("GET", "/v1/schedules", undefined, other.apiKey);
    expect(theirs.body.schedules).toEqual([]);
    // The same name is free in another tenant.
    const same = await api("POST", "/v1/schedules", { ...base, name: "mine" }, other.apiKey);
    expect(same.status).toBe(201);
    expect((await api("GET", `/v1/schedules/${id}`)).body.paused).toBe(false);
  });
});

describe("chronofence schedules (CLI over HTTP)", () => {
  async function cli(...args: string[]): Promise<string[]> {
    const lines: string[] = [];
    const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => {
      lines.push(String(line));
    });
    const errors: string[] = [];
    const errorSpy = vi.spyOn(console, "error").mockImplementation((line: unknown) => {
      errors.push(String(line));
    });
    try {
      await main(["node", "chronofence", "schedules", "--api-url", fixture.api.baseUrl, ...args]);
    } finally {
      spy.mockRestore();
      errorSpy.mockRestore();
    }
    // A failed API command prints its error and sets the exit code (docs/cli.md).
    const code = process.exitCode;
    process.exitCode = undefined;
    if (code !== undefined && code !== 0) throw new Error(`exit ${code}: ${errors.join("\n")}`);
    return lines;
  }

  it("creates, lists, pauses, resumes and deletes through the API", async () => {
    // This file's worker is its own process: the CLI reads its key from here.
    process.env.CF_API_KEY = fixture.tenant.apiKey;
    const [created] = await cli(
      "create",
      "--name",
      "from-cli",
      "--cron",
      "@hourly",
      "--type",
      "cli.job",
      "--tz",
      "Asia/Kolkata",
      "--payload",
      '{"a":1}',
      "--jitter-ms",
      "250",
    );
    const id = created!.split(/\s+/)[0]!;
    expect(created).toMatch(/from-cli {2}"@hourly" Asia\/Kolkata {2}cli\.job {2}next 20/);
    expect((await cli("list")).join("\n")).toContain(id);
    expect((await cli("pause", id))[0]).toMatch(/paused$/);
    expect((await cli("resume", id))[0]).toMatch(/next 20/);
    const [json] = await cli("--json", "get", id);
    expect(JSON.parse(json!)).toMatchObject({ id, jitter_ms: 250, payload: { a: 1 }, history: [] });
    expect(await cli("delete", id)).toEqual([`deleted ${id} (0 tasks cancelled)`]);
    await expect(cli("get", id)).rejects.toThrow(/exit 3: .*HTTP 404\): schedule not found/);
    await expect(cli("create", "--name", "bad", "--cron", "* * *", "--type", "x")).rejects.toThrow(
      /exit 5: .*HTTP 422\): a cron expression has 5 fields/,
    );
  });
});
