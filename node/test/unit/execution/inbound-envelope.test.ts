import { describe, expect, it } from "vitest";
import { type ArmedTask, envelopeJson } from "../../../src/domain/envelope.js";
import { envelopeOf, parseEnvelope } from "../../../src/domain/inbound-envelope.js";

const task: ArmedTask = {
  id: "0190a000-0000-7000-8000-000000000001",
  tenantId: "0190a000-0000-7000-8000-000000000002",
  type: "send",
  payloadJson: '{"to":"a@b"}',
  priority: "critical",
  runAtMs: 1_700_000_000_123,
  attempt: 2,
  fencingToken: "9007199254740993",
  timeoutMs: 5000,
  idempotencyKey: "k",
  workflowId: null,
  graceMs: 0,
};

describe("parseEnvelope", () => {
  it("reads back what the dispatcher writes, tokens beyond 2^53 included", () => {
    expect(parseEnvelope(envelopeJson(task, task.runAtMs + 1))).toEqual({
      ok: true,
      envelope: {
        taskId: task.id,
        tenantId: task.tenantId,
        type: "send",
        attempt: 2,
        fencingToken: "9007199254740993",
        runAtMs: task.runAtMs,
        dispatchedAtMs: task.runAtMs + 1,
        timeoutMs: 5000,
        idempotencyKey: "k",
        payload: { to: "a@b" },
        workflowId: null,
      },
    });
  });

  it("refuses anything else with the reason", () => {
    expect(parseEnvelope("nope")).toMatchObject({ ok: false, reason: "not JSON" });
    expect(parseEnvelope("[]")).toMatchObject({ ok: false, reason: "not a JSON object" });
    expect(parseEnvelope('{"v":0}')).toMatchObject({ ok: false, reason: "unsupported version 0" });
    const bad = JSON.parse(envelopeJson(task, task.runAtMs));
    bad.fencing_token = 42;
    bad.task_id = "x";
    delete bad.payload;
    expect(parseEnvelope(JSON.stringify(bad))).toMatchObject({
      ok: false,
      reason: "bad task_id, fencing_token, payload",
    });
  });
});

describe("envelopeOf (handed over in memory)", () => {
  it("is what parsing the text would give, instants in whole milliseconds as the text carries them", () => {
    const cases: ArmedTask[] = [
      task,
      { ...task, idempotencyKey: null, workflowId: "0190a000-0000-7000-8000-0000000000ff" },
      { ...task, runAtMs: task.runAtMs + 0.7, payloadJson: '[1,"é\\u0000",{"a":null}]' },
      { ...task, payloadJson: "null", type: 'a "quoted" type' },
    ];
    for (const armed of cases) {
      const source = { task: armed, dispatchedAtMs: armed.runAtMs + 3.6 };
      const parsed = parseEnvelope(envelopeJson(armed, source.dispatchedAtMs));
      expect(parsed).toEqual(envelopeOf(source));
      expect(parsed.ok).toBe(true);
    }
  });

  it("reads the payload afresh for each delivery: a handler's changes stay its own", () => {
    const source = { task, dispatchedAtMs: task.runAtMs };
    const payloadOf = () =>
      (envelopeOf(source) as { envelope: { payload: unknown } }).envelope.payload;
    const first = payloadOf() as { to: string };
    first.to = "changed";
    expect(payloadOf()).toEqual({ to: "a@b" });
  });

  it("refuses, naming the task, a payload that is not JSON (never thrown at the consumer)", () => {
    expect(envelopeOf({ task: { ...task, payloadJson: "{" }, dispatchedAtMs: 0 })).toEqual({
      ok: false,
      code: "not_json",
      reason: "payload not JSON",
      taskId: task.id,
      tenantId: task.tenantId,
    });
  });
});
