import { describe, expect, it } from "vitest";
import {
  type ArmedTask,
  checkEnvelope,
  envelopeCharsAtMost,
  envelopeJson,
  isOverdue,
  topicKindOf,
  topicName,
} from "../../../src/domain/envelope.js";

const task: ArmedTask = {
  id: "01900000-0000-7000-8000-000000000001",
  tenantId: "01900000-0000-7000-8000-0000000000aa",
  type: "email.send",
  payloadJson: '{"to":"a@b.c","n":[1,2]}',
  priority: "bulk",
  runAtMs: Date.parse("2030-01-01T00:00:00.123Z"),
  attempt: 2,
  fencingToken: "9007199254740993",
  timeoutMs: 30_000,
  idempotencyKey: 'key "quoted"',
  workflowId: null,
  graceMs: 5000,
};

describe("envelope", () => {
  it("is versioned JSON with every field of docs/architecture.md section 7, the payload spliced in", () => {
    const envelope = JSON.parse(envelopeJson(task, task.runAtMs + 7));
    expect(envelope).toEqual({
      v: 1,
      task_id: task.id,
      tenant_id: task.tenantId,
      type: "email.send",
      attempt: 2,
      fencing_token: "9007199254740993",
      run_at: "2030-01-01T00:00:00.123Z",
      dispatched_at: "2030-01-01T00:00:00.130Z",
      timeout_ms: 30_000,
      idempotency_key: 'key "quoted"',
      payload: { to: "a@b.c", n: [1, 2] },
    });
  });

  it("carries workflow_id only when the task belongs to a workflow", () => {
    const wf = { ...task, workflowId: "01900000-0000-7000-8000-0000000000ff" };
    expect(JSON.parse(envelopeJson(wf, task.runAtMs)).workflow_id).toBe(wf.workflowId);
    expect("workflow_id" in JSON.parse(envelopeJson(task, task.runAtMs))).toBe(false);
  });

  it("names its dispatcher, shard and epoch when given them", () => {
    const origin = { nodeId: 'node "a"', shard: 3, epoch: 7 };
    expect(JSON.parse(envelopeJson(task, task.runAtMs, origin))).toMatchObject({
      dispatcher: 'node "a"',
      shard: 3,
      shard_epoch: 7,
    });
  });

  it("is refused by checkEnvelope exactly where it cannot be built", () => {
    const instants = [
      0,
      -1,
      8.64e15,
      -8.64e15,
      8.64e15 + 1,
      Number.MAX_VALUE,
      Number.NaN,
      -Infinity,
    ];
    for (const runAtMs of instants) {
      for (const dispatchedAtMs of [task.runAtMs, runAtMs]) {
        const source = { task: { ...task, runAtMs }, dispatchedAtMs };
        let built = true;
        try {
          envelopeJson(source.task, dispatchedAtMs);
        } catch {
          built = false;
        }
        if (built) expect(() => checkEnvelope(source)).not.toThrow();
        else expect(() => checkEnvelope(source)).toThrow(RangeError);
      }
    }
  });

  it("is never longer than envelopeCharsAtMost says, whatever its texts hold", () => {
    const awkward = '\u0000\u001f"\\é✓😀';
    const cases: Array<[ArmedTask, { nodeId: string; shard: number; epoch: number } | undefined]> =
      [
        [task, undefined],
        [{ ...task, type: awkward.repeat(50), idempotencyKey: awkward.repeat(40) }, undefined],
        [
          {
            ...task,
            attempt: Number.MAX_SAFE_INTEGER,
            timeoutMs: Number.MAX_SAFE_INTEGER,
            runAtMs: 8.64e15,
            workflowId: "01900000-0000-7000-8000-0000000000ff",
            idempotencyKey: null,
          },
          { nodeId: awkward.repeat(20), shard: 65_535, epoch: Number.MAX_SAFE_INTEGER },
        ],
        [
          { ...task, payloadJson: `"${"x".repeat(100_000)}"` },
          { nodeId: "n", shard: 0, epoch: 1 },
        ],
      ];
    for (const [armed, origin] of cases) {
      const dispatchedAtMs = -8.64e15; // the longest instant text there is
      const text = envelopeJson(armed, dispatchedAtMs, origin);
      expect(envelopeCharsAtMost({ task: armed, dispatchedAtMs, origin })).toBeGreaterThanOrEqual(
        text.length,
      );
    }
  });

  it("goes to the priority's topic, or to overdue when later than the tenant's grace", () => {
    expect(topicKindOf(task, task.runAtMs + 5000)).toBe("bulk");
    expect(isOverdue(task, task.runAtMs + 5000)).toBe(false);
    expect(topicKindOf(task, task.runAtMs + 5001)).toBe("overdue");
    expect(topicName("", "critical")).toBe("tasks.critical");
    expect(topicName("test-1.", "overdue")).toBe("test-1.tasks.overdue");
  });
});
