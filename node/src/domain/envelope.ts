/**
 * What the dispatcher publishes (docs/architecture.md section 7): a versioned JSON
 * envelope, keyed by tenant, on the topic of the task's priority — or on
 * `tasks.overdue` when it is published later than its tenant's grace.
 */
import type { Priority } from "./task.js";

/**
 * Changes only for an incompatible change (a field's meaning, a field gone);
 * an added field keeps it, since readers ignore fields they do not know
 * (the compatibility rules are in inbound-envelope.ts).
 */
export const ENVELOPE_VERSION = 1;

export const TOPICS = ["critical", "standard", "bulk", "overdue"] as const;
export type TopicKind = (typeof TOPICS)[number];

/** `tasks.critical`, or `<prefix>tasks.critical` so parallel deployments (and tests) stay apart. */
export const topicName = (prefix: string, kind: TopicKind): string => `${prefix}tasks.${kind}`;

/** An ARMED task as the dispatcher holds it until it is due. */
export interface ArmedTask {
  id: string;
  tenantId: string;
  type: string;
  /** The payload as JSON text, spliced into the envelope without re-parsing. */
  payloadJson: string;
  priority: Priority;
  runAtMs: number;
  attempt: number;
  fencingToken: string;
  timeoutMs: number;
  idempotencyKey: string | null;
  workflowId: string | null;
  graceMs: number;
}

/** Late by more than the grace: the task goes to the overdue topic (and is counted). */
export const isOverdue = (task: ArmedTask, nowMs: number): boolean =>
  nowMs - task.runAtMs > task.graceMs;

export const topicKindOf = (task: ArmedTask, nowMs: number): TopicKind =>
  isOverdue(task, nowMs) ? "overdue" : task.priority;

/** Which dispatcher published an envelope, under which shard lease (informational). */
export interface DispatchOrigin {
  nodeId: string;
  shard: number;
  epoch: number;
}

/** What one envelope says: the task as fired, when, and by which dispatcher. */
export interface EnvelopeSource {
  task: ArmedTask;
  dispatchedAtMs: number;
  origin?: DispatchOrigin;
}

/**
 * The envelope text. Built by hand: the payload is already JSON.
 *
 * Where it came from travels in the envelope, not in Kafka headers: kafkajs
 * encodes each header with two buffers of its own, which measured about half
 * of its CPU per message (25 of 47 µs, 500-message batches).
 */
export function envelopeJson(
  task: ArmedTask,
  dispatchedAtMs: number,
  origin?: DispatchOrigin,
): string {
  const workflow = task.workflowId === null ? "" : `,"workflow_id":"${task.workflowId}"`;
  const from =
    origin === undefined
      ? ""
      : `,"dispatcher":${JSON.stringify(origin.nodeId)},"shard":${origin.shard},"shard_epoch":${origin.epoch}`;
  return (
    `{"v":${ENVELOPE_VERSION},"task_id":"${task.id}","tenant_id":"${task.tenantId}",` +
    `"type":${JSON.stringify(task.type)},"attempt":${task.attempt},` +
    `"fencing_token":"${task.fencingToken}",` +
    `"run_at":"${new Date(task.runAtMs).toISOString()}",` +
    `"dispatched_at":"${new Date(dispatchedAtMs).toISOString()}",` +
    `"timeout_ms":${task.timeoutMs},` +
    `"idempotency_key":${task.idempotencyKey === null ? "null" : JSON.stringify(task.idempotencyKey)},` +
    `"payload":${task.payloadJson}${workflow}${from}}`
  );
}

/** Date's range (ECMA-262 TimeClip): an instant beyond it has no ISO text. */
const MAX_INSTANT_MS = 8.64e15;

/**
 * Throws where envelopeJson(source) would (an instant it cannot write),
 * without building it: the outbox drops such a task alone, rather than let a
 * transport fail a whole request each time it reads the text.
 */
export function checkEnvelope({ task, dispatchedAtMs }: EnvelopeSource): void {
  checkInstant("run_at", task.runAtMs);
  checkInstant("dispatched_at", dispatchedAtMs);
}

/** NaN fails the comparison too. Two calls, not a loop over pairs: this runs for every task. */
function checkInstant(field: string, ms: number): void {
  if (!(Math.abs(ms) <= MAX_INSTANT_MS)) throw new RangeError(`${field} ${ms} is not an instant`);
}

/** Room for the envelope's names, ids, instants and numbers: all but its texts (about 460). */
const ENVELOPE_FIXED_CHARS = 600;

/** At most how long a JSON string of `text` is: six characters (\u0000) for each, and quotes. */
const jsonStringCharsAtMost = (text: string): number => 6 * text.length + 2;

/**
 * At least the length of envelopeJson(source), without building it: the
 * outbox sizes every envelope against the broker's limit, and a transport in
 * memory never needs the text at all.
 */
export function envelopeCharsAtMost({ task, origin }: EnvelopeSource): number {
  return (
    ENVELOPE_FIXED_CHARS +
    task.payloadJson.length +
    jsonStringCharsAtMost(task.type) +
    (task.idempotencyKey === null ? 0 : jsonStringCharsAtMost(task.idempotencyKey)) +
    (origin === undefined ? 0 : jsonStringCharsAtMost(origin.nodeId))
  );
}
