/**
 * Mixed versions during an upgrade (issue 13; the source document, section
 * 19): this worker reads the envelope the first v1 dispatchers wrote (no
 * origin fields), and a newer dispatcher's with fields it does not know;
 * it refuses, with a code and the task's names, what it cannot read.
 */
import { describe, expect, it } from "vitest";
import { parseEnvelope } from "../../../src/domain/inbound-envelope.js";

const TASK = "0190a000-0000-7000-8000-000000000001";
const TENANT = "0190a000-0000-7000-8000-000000000002";
/** As the dispatcher of commit 7f319b2 published it: before dispatcher, shard, shard_epoch. */
const FIRST_V1 = `{"v":1,"task_id":"${TASK}","tenant_id":"${TENANT}","type":"send","attempt":0,"fencing_token":"42","run_at":"2026-11-29T10:00:00.000Z","dispatched_at":"2026-11-29T10:00:00.002Z","timeout_ms":5000,"idempotency_key":null,"payload":{"to":"a@b"}}`;

describe("envelope versions", () => {
  it("reads the previous dispatchers' v1 envelope", () => {
    const parsed = parseEnvelope(FIRST_V1);
    expect(parsed).toMatchObject({
      ok: true,
      envelope: { taskId: TASK, tenantId: TENANT, fencingToken: "42", payload: { to: "a@b" } },
    });
  });

  it("ignores fields a newer dispatcher adds", () => {
    const newer = { ...JSON.parse(FIRST_V1), priority_hint: 3, trace: { id: "x" }, shard: 4 };
    expect(parseEnvelope(JSON.stringify(newer))).toEqual(parseEnvelope(FIRST_V1));
  });

  it("refuses what it cannot read with a code, naming the task where it can", () => {
    const v2 = JSON.stringify({ ...JSON.parse(FIRST_V1), v: 2 });
    expect(parseEnvelope(v2)).toMatchObject({
      ok: false,
      code: "unsupported_version",
      taskId: TASK,
      tenantId: TENANT,
    });
    const badTypes = JSON.stringify({
      ...JSON.parse(FIRST_V1),
      timeout_ms: "5000",
      workflow_id: 7,
    });
    expect(parseEnvelope(badTypes)).toMatchObject({
      ok: false,
      code: "bad_fields",
      reason: "bad timeout_ms, workflow_id",
      taskId: TASK,
    });
    const { payload: _, ...missing } = JSON.parse(FIRST_V1);
    expect(parseEnvelope(JSON.stringify(missing))).toMatchObject({ code: "bad_fields" });
    expect(parseEnvelope("{not json")).toMatchObject({ code: "not_json" });
    expect(parseEnvelope("null")).toMatchObject({ code: "not_an_object" });
    expect(parseEnvelope(`${FIRST_V1}${" ".repeat(100)}`, 100)).toMatchObject({
      code: "too_large",
    });
    expect(parseEnvelope("[".repeat(100_000))).toMatchObject({ ok: false });
  });
});
