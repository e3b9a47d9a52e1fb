/**
 * Reading an envelope back (the worker's side of domain/envelope.ts). A
 * message that is not a well-formed v1 envelope is refused with the reason:
 * the worker counts it and moves on, since no retry can fix it.
 */
import { ENVELOPE_VERSION } from "./envelope.js";

export interface InboundEnvelope {
  taskId: string;
  tenantId: string;
  type: string;
  /** Starts before this one (0 on the first delivery); the started attempt is one more. */
  attempt: number;
  fencingToken: string;
  runAtMs: number;
  dispatchedAtMs: number;
  timeoutMs: number;
  idempotencyKey: string | null;
  payload: unknown;
  workflowId: string | null;
}

export type ParsedEnvelope =
  | { ok: true; envelope: InboundEnvelope }
  | { ok: false; reason: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TOKEN = /^[1-9][0-9]{0,18}$/;

export function parseEnvelope(text: string): ParsedEnvelope {
  let raw: Record<string, unknown>;
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return { ok: false, reason: "not a JSON object" };
    }
    raw = value as Record<string, unknown>;
  } catch {
    return { ok: false, reason: "not JSON" };
  }
  if (raw.v !== ENVELOPE_VERSION)
    return { ok: false, reason: `unsupported version ${String(raw.v)}` };
  const runAtMs = typeof raw.run_at === "string" ? Date.parse(raw.run_at) : Number.NaN;
  const dispatchedAtMs =
    typeof raw.dispatched_at === "string" ? Date.parse(raw.dispatched_at) : Number.NaN;
  const problems = [
    typeof raw.task_id === "string" && UUID.test(raw.task_id) ? null : "task_id",
    typeof raw.tenant_id === "string" && UUID.test(raw.tenant_id) ? null : "tenant_id",
    typeof raw.type === "string" && raw.type.length > 0 ? null : "type",
    Number.isSafeInteger(raw.attempt) && (raw.attempt as number) >= 0 ? null : "attempt",
    typeof raw.fencing_token === "string" && TOKEN.test(raw.fencing_token) ? null : "fencing_token",
    Number.isFinite(runAtMs) ? null : "run_at",
    Number.isFinite(dispatchedAtMs) ? null : "dispatched_at",
    Number.isSafeInteger(raw.timeout_ms) && (raw.timeout_ms as number) >= 1 ? null : "timeout_ms",
    raw.idempotency_key === null || typeof raw.idempotency_key === "string"
      ? null
      : "idempotency_key",
    raw.workflow_id === undefined || typeof raw.workflow_id === "string" ? null : "workflow_id",
    "payload" in raw ? null : "payload",
  ].filter((p) => p !== null);
  if (problems.length > 0) return { ok: false, reason: `bad ${problems.join(", ")}` };
  return {
    ok: true,
    envelope: {
      taskId: raw.task_id as string,
      tenantId: raw.tenant_id as string,
      type: raw.type as string,
      attempt: raw.attempt as number,
      fencingToken: raw.fencing_token as string,
      runAtMs,
      dispatchedAtMs,
      timeoutMs: raw.timeout_ms as number,
      idempotencyKey: (raw.idempotency_key as string | null) ?? null,
      payload: raw.payload,
      workflowId: (raw.workflow_id as string | undefined) ?? null,
    },
  };
}
