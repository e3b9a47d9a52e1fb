/**
 * Reading an envelope back (the worker's side of domain/envelope.ts). A
 * message that is not a well-formed envelope is refused with a code and the
 * reason: the worker counts and logs it and moves on, since no retry can fix
 * it. The refusal names the task where it can (its task_id and tenant_id are
 * readable UUIDs): that task is still ARMED in Postgres, and the reconciler
 * re-arms it after the dispatch timeout, so a garbled copy loses nothing.
 *
 * Compatibility (the rules a rolling deployment relies on, docs/architecture.md
 * section 7): `v` changes only when a field changes its meaning or a field
 * this reader needs goes away. Adding a field does not change `v`: a reader
 * ignores fields it does not know (a newer dispatcher's), and a field added
 * since the first v1 envelope is optional here (the origin fields,
 * `dispatcher`, `shard`, `shard_epoch`, are not read at all). A `v` this
 * worker does not read is refused as unsupported, newer or not: upgrade the
 * workers before the dispatchers that write it.
 */
import { ENVELOPE_VERSION, type EnvelopeSource } from "./envelope.js";
import { isUuid } from "./uuid.js";

/** Why a message is not an envelope this worker reads: a metric label, a closed set. */
export type MalformedReason =
  | "too_large"
  | "not_json"
  | "not_an_object"
  | "unsupported_version"
  | "bad_fields";

export interface EnvelopeRefusal {
  ok: false;
  code: MalformedReason;
  reason: string;
  /** Present when readable: the task (still ARMED) an operator may look for. */
  taskId?: string;
  tenantId?: string;
}

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

export type ParsedEnvelope = { ok: true; envelope: InboundEnvelope } | EnvelopeRefusal;

const TOKEN = /^[1-9][0-9]{0,18}$/;

/** The task a refused envelope names, where its ids are readable. */
const namesOf = (raw: Record<string, unknown>): { taskId?: string; tenantId?: string } => ({
  ...(isUuid(raw.task_id) && { taskId: raw.task_id }),
  ...(isUuid(raw.tenant_id) && { tenantId: raw.tenant_id }),
});

/**
 * `maxChars`: longer text is refused unparsed (a dispatcher sends nothing
 * larger than CF_KAFKA_MAX_MESSAGE_BYTES; each character is a byte or more).
 */
export function parseEnvelope(text: string, maxChars = Number.POSITIVE_INFINITY): ParsedEnvelope {
  if (text.length > maxChars) {
    return {
      ok: false,
      code: "too_large",
      reason: `${text.length} characters (at most ${maxChars})`,
    };
  }
  let raw: Record<string, unknown>;
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return { ok: false, code: "not_an_object", reason: "not a JSON object" };
    }
    raw = value as Record<string, unknown>;
  } catch {
    return { ok: false, code: "not_json", reason: "not JSON" };
  }
  if (raw.v !== ENVELOPE_VERSION) {
    const newer = Number.isSafeInteger(raw.v) && (raw.v as number) > ENVELOPE_VERSION;
    const reason = newer
      ? `version ${String(raw.v)} is newer than this worker reads (${ENVELOPE_VERSION}): upgrade the workers first`
      : `unsupported version ${JSON.stringify(raw.v) ?? "(none)"}`;
    return { ok: false, code: "unsupported_version", reason, ...namesOf(raw) };
  }
  const runAtMs = typeof raw.run_at === "string" ? Date.parse(raw.run_at) : Number.NaN;
  const dispatchedAtMs =
    typeof raw.dispatched_at === "string" ? Date.parse(raw.dispatched_at) : Number.NaN;
  // Pushed only when wrong: a well-formed envelope (each one a worker runs) allocates no list.
  const problems: string[] = [];
  if (!isUuid(raw.task_id)) problems.push("task_id");
  if (!isUuid(raw.tenant_id)) problems.push("tenant_id");
  if (!(typeof raw.type === "string" && raw.type.length > 0)) problems.push("type");
  if (!(Number.isSafeInteger(raw.attempt) && (raw.attempt as number) >= 0))
    problems.push("attempt");
  if (!(typeof raw.fencing_token === "string" && TOKEN.test(raw.fencing_token)))
    problems.push("fencing_token");
  if (!Number.isFinite(runAtMs)) problems.push("run_at");
  if (!Number.isFinite(dispatchedAtMs)) problems.push("dispatched_at");
  if (!(Number.isSafeInteger(raw.timeout_ms) && (raw.timeout_ms as number) >= 1))
    problems.push("timeout_ms");
  if (!(raw.idempotency_key === null || typeof raw.idempotency_key === "string"))
    problems.push("idempotency_key");
  if (!(raw.workflow_id === undefined || isUuid(raw.workflow_id))) problems.push("workflow_id");
  if (!Object.hasOwn(raw, "payload")) problems.push("payload");
  if (problems.length > 0) {
    return { ok: false, code: "bad_fields", reason: `bad ${problems.join(", ")}`, ...namesOf(raw) };
  }
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

/**
 * The envelope a dispatcher of this process built, handed over in memory
 * (direct mode, the embedded default): there is no text to parse and nothing
 * to check, only the payload to read, afresh for each delivery as a parsed
 * one would be. The instants are whole milliseconds, as the text carries them.
 * (The payload is Postgres' own JSON text; were it not JSON, the envelope is
 * refused as a text would be.)
 */
export function envelopeOf({ task, dispatchedAtMs }: EnvelopeSource): ParsedEnvelope {
  let payload: unknown;
  try {
    payload = JSON.parse(task.payloadJson);
  } catch {
    const names = { taskId: task.id, tenantId: task.tenantId };
    return { ok: false, code: "not_json", reason: "payload not JSON", ...names };
  }
  return {
    ok: true,
    envelope: {
      taskId: task.id,
      tenantId: task.tenantId,
      type: task.type,
      attempt: task.attempt,
      fencingToken: task.fencingToken,
      runAtMs: Math.trunc(task.runAtMs),
      dispatchedAtMs: Math.trunc(dispatchedAtMs),
      timeoutMs: task.timeoutMs,
      idempotencyKey: task.idempotencyKey,
      payload,
      workflowId: task.workflowId,
    },
  };
}
