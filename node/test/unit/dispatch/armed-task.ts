import type { ArmedTask } from "../../../src/domain/envelope.js";

/** An armed standard task of tenant "t", due at `runAtMs`. */
export const armedTask = (id: string, runAtMs: number): ArmedTask => ({
  id,
  tenantId: "t",
  type: "x",
  payloadJson: "null",
  priority: "standard",
  runAtMs,
  attempt: 0,
  fencingToken: "1",
  timeoutMs: 1000,
  idempotencyKey: null,
  workflowId: null,
  graceMs: 5000,
});
