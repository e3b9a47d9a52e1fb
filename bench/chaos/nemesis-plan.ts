/**
 * What the nemesis will do, decided from the seed before the run starts
 * (pure: tested in node/test/unit/chaos/nemesis-plan.test.ts). One fault at a
 * time: each is injected, held, healed, and the next waits at least its gap
 * after the heal (a Kafka restart takes as long as the broker needs, so the
 * plan's instants are "not before").
 *
 * | kind | what | held |
 * |---|---|---|
 * | kill | kill -9 of any process, restarted after the hold | 0.5–3 s down |
 * | pause | SIGSTOP of a dispatch node or worker past its lease, then SIGCONT (a zombie) | lease + 2–5 s |
 * | pause_leader | the same, on the node holding the `leader` lease | lease + 2–5 s |
 * | redis_flush | FLUSHALL | — |
 * | redis_restart | redis-server killed and started again (no persistence: a flush too) | 1–4 s down |
 * | kafka_restart | the broker stopped and started again (its log kept) | 0–3 s down, plus its own stop and start |
 * | postgres_restart | the cluster stopped (`immediate`: a crash, or `fast`) and started again | 0.5–3 s down |
 * | partition_postgres, _redis, _kafka | one node's proxy to that service black-holed | 4–12 s |
 * | clock_skew | a dispatch node restarted with its clock 2–5 s behind, then restarted right | 15–25 s |
 * | clock_ahead | the same, 1–3 s ahead: not in the default list, since a node whose clock runs ahead fires early by design (docs/evidence.md) | 15–25 s |
 */
import type { Random } from "./random.js";

export const FAULT_KINDS = [
  "kill",
  "pause",
  "pause_leader",
  "redis_flush",
  "redis_restart",
  "kafka_restart",
  "postgres_restart",
  "partition_postgres",
  "partition_redis",
  "partition_kafka",
  "clock_skew",
  "clock_ahead",
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export const DEFAULT_FAULTS: readonly FaultKind[] = FAULT_KINDS.filter((k) => k !== "clock_ahead");

export interface PlannedFault {
  /** Not before this many ms after the workload started. */
  atMs: number;
  kind: FaultKind;
  /** A process name (kill, pause, clock_*), a node number as text (partition_*), or "". */
  target: string;
  /** How long the fault is held before it is healed. */
  holdMs: number;
  /** clock_*: the offset given to the node's clock; postgres_restart: 0 fast, 1 immediate. */
  value: number;
}

export interface PlanInput {
  durationMs: number;
  kinds: readonly FaultKind[];
  /** Process names by kind, e.g. { api: ["api-1"], dispatch: [...], worker: [...] }. */
  processes: { api: readonly string[]; dispatch: readonly string[]; worker: readonly string[] };
  nodes: number;
  /** The longest lease a pause must outlast (shard leases, execution leases). */
  leaseMs: number;
  /** Quiet time at the start (the system warms up) and before the end (it settles). */
  warmupMs: number;
  tailMs: number;
  /** Gap after each heal, drawn in [minGapMs, maxGapMs]. */
  minGapMs: number;
  maxGapMs: number;
}

/** Parses `--faults a,b,c`, refusing unknown kinds with the list of known ones. */
export function parseFaultKinds(list: string | undefined): FaultKind[] {
  if (list === undefined || list === "") return [...DEFAULT_FAULTS];
  if (list === "none") return [];
  const kinds = list.split(",").map((k) => k.trim());
  const unknown = kinds.filter((k) => !(FAULT_KINDS as readonly string[]).includes(k));
  if (unknown.length > 0)
    throw new Error(
      `unknown fault kind(s) ${unknown.join(", ")}; known: ${FAULT_KINDS.join(", ")}`,
    );
  return kinds as FaultKind[];
}

/** A rough hold of each kind, so the plan can tell how many faults fit. */
const ROUGH_EXTRA_MS: Partial<Record<FaultKind, number>> = { kafka_restart: 20_000 };

export function planFaults(random: Random, input: PlanInput): PlannedFault[] {
  const plan: PlannedFault[] = [];
  if (input.kinds.length === 0) return plan;
  let atMs = input.warmupMs;
  while (atMs < input.durationMs - input.tailMs) {
    const kind = random.pick(input.kinds);
    const fault = draw(random, kind, input);
    plan.push({ atMs, ...fault });
    atMs += fault.holdMs + (ROUGH_EXTRA_MS[kind] ?? 0) + random.int(input.minGapMs, input.maxGapMs);
  }
  return plan;
}

function draw(random: Random, kind: FaultKind, input: PlanInput): Omit<PlannedFault, "atMs"> {
  const { processes } = input;
  const pauseMs = () => input.leaseMs + random.int(2000, 5000);
  switch (kind) {
    case "kill":
      return {
        kind,
        target: random.pick([...processes.api, ...processes.dispatch, ...processes.worker]),
        holdMs: random.int(500, 3000),
        value: 0,
      };
    case "pause":
      return {
        kind,
        target: random.pick([...processes.dispatch, ...processes.worker]),
        holdMs: pauseMs(),
        value: 0,
      };
    case "pause_leader":
      return { kind, target: "", holdMs: pauseMs(), value: 0 };
    case "redis_flush":
      return { kind, target: "", holdMs: 0, value: 0 };
    case "redis_restart":
      return { kind, target: "", holdMs: random.int(1000, 4000), value: 0 };
    case "kafka_restart":
      return { kind, target: "", holdMs: random.int(0, 3000), value: 0 };
    case "postgres_restart":
      return { kind, target: "", holdMs: random.int(500, 3000), value: random.int(0, 1) };
    case "partition_postgres":
    case "partition_redis":
    case "partition_kafka":
      return {
        kind,
        target: String(random.int(1, input.nodes)),
        holdMs: random.int(4000, 12_000),
        value: 0,
      };
    case "clock_skew":
    case "clock_ahead":
      return {
        kind,
        target: random.pick(processes.dispatch),
        holdMs: random.int(15_000, 25_000),
        value: kind === "clock_skew" ? -random.int(2000, 5000) : random.int(1000, 3000),
      };
  }
}
