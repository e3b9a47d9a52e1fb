/**
 * The chaos run's report, from its history, the checker's verdicts and the
 * nemesis's log (pure: node/test/unit/chaos/report.test.ts):
 *  - faults injected, by kind; processes that exited without being told to;
 *  - each invariant's verdict with its counterexamples;
 *  - lateness (a run's handler start − the run_at its token was armed with)
 *    of runs due during a fault (from its injection to `SETTLE_MS` after its
 *    heal) and of the others;
 *  - duplicates, which at least once allows: a task run again after a run
 *    that did not fail on purpose, by what took the first run's token away
 *    (the transition that gave the next token, with its error code).
 * `renderMarkdown` writes the same as a page.
 */
import { type Lateness, latenessOf } from "../support.js";
import type { Verdict } from "./checker.js";
import type { RequestRecord } from "./client.js";
import type { Execution, History, Transition } from "./history.js";
import type { FaultRecord } from "./nemesis.js";
import type { Crash } from "./processes.js";
import type { TimelinePoint } from "./timeline.js";

/** After a heal, runs due this long still count as "during the fault" (the system recovering). */
export const SETTLE_MS = 5000;

export interface LatenessSummary extends Lateness {
  count: number;
}

export interface ChaosReport {
  seed: number;
  minutes: number;
  rate_per_s: number;
  fault_kinds: string[];
  started_at: string;
  /** Tasks acknowledged (201, or 200 for an idempotent replay), distinct ids. */
  acked: number;
  executions: number;
  tasks_by_status: Record<string, number>;
  requests: Record<string, Record<string, number>>;
  not_sent: number;
  faults: Record<string, number>;
  fault_log: FaultRecord[];
  crashes: Crash[];
  quiesced: boolean;
  /** The number of invariant violations (all rules). */
  violations: number;
  invariants: Record<string, { ok: boolean; violations: number; counterexamples: string[] }>;
  lateness: { during_faults: LatenessSummary; outside_faults: LatenessSummary };
  duplicates: { total: number; by_cause: Record<string, number> };
  reconcile_pass: unknown;
  timeline: TimelinePoint[];
}

export interface RunFacts {
  seed: number;
  minutes: number;
  ratePerS: number;
  faultKinds: readonly string[];
  startedAtMs: number;
  history: History;
  verdicts: readonly Verdict[];
  faults: readonly FaultRecord[];
  crashes: readonly Crash[];
  requests: readonly RequestRecord[];
  notSent: number;
  quiesced: boolean;
  reconcile: unknown;
  timeline: readonly TimelinePoint[];
}

/** The run_at each token was armed with (the arm transition carries it). */
function armedDue(transitions: readonly Transition[]): Map<string, number> {
  const due = new Map<string, number>();
  for (const t of transitions)
    if (t.to === "ARMED" && t.fencingToken && t.runAtMs !== undefined)
      due.set(`${t.taskId}/${t.fencingToken}`, t.runAtMs);
  return due;
}

export function latenessAroundFaults(
  history: History,
  faults: readonly FaultRecord[],
  settleMs = SETTLE_MS,
): { during_faults: LatenessSummary; outside_faults: LatenessSummary } {
  const due = armedDue(history.transitions);
  const during: number[] = [];
  const outside: number[] = [];
  for (const e of history.executions) {
    const dueMs = due.get(`${e.taskId}/${e.fencingToken}`);
    if (dueMs === undefined) continue;
    const inFault = faults.some((f) => dueMs >= f.startMs && dueMs <= f.endMs + settleMs);
    (inFault ? during : outside).push(e.startedAtMs - dueMs);
  }
  return {
    during_faults: { count: during.length, ...latenessOf(during) },
    outside_faults: { count: outside.length, ...latenessOf(outside) },
  };
}

/** Why a task lost a run's token: the transition that issued the next one. */
function causeOf(t: Transition | undefined): string {
  if (!t) return "unknown";
  if (t.from === "RUNNING" && t.to === "SCHEDULED") return t.errorCode ?? "failed";
  if (t.from === "ARMED" && t.to === "SCHEDULED") return "rearmed_not_started";
  if (t.from === "ARMED" && t.to === "ARMED") return "rearmed_by_new_shard_owner";
  return `${t.from}_to_${t.to}`;
}

export function duplicatesByCause(history: History): {
  total: number;
  by_cause: Record<string, number>;
} {
  const byTask = new Map<string, Execution[]>();
  for (const e of history.executions) byTask.set(e.taskId, [...(byTask.get(e.taskId) ?? []), e]);
  const transitionsOf = new Map<string, Transition[]>();
  for (const t of history.transitions)
    transitionsOf.set(t.taskId, [...(transitionsOf.get(t.taskId) ?? []), t]);
  const byCause: Record<string, number> = {};
  let total = 0;
  for (const [taskId, runs] of byTask) {
    runs.sort(
      (a, b) =>
        Number(BigInt(a.fencingToken) - BigInt(b.fencingToken)) || a.startedAtMs - b.startedAtMs,
    );
    for (let i = 1; i < runs.length; i++) {
      const prev = runs[i - 1]!;
      const next = runs[i]!;
      if (prev.outcome === "threw") continue; // a retry the workload asked for
      const lo = BigInt(prev.fencingToken);
      const hi = BigInt(next.fencingToken);
      const between = (transitionsOf.get(taskId) ?? []).filter(
        (t) => t.fencingToken && BigInt(t.fencingToken) > lo && BigInt(t.fencingToken) <= hi,
      );
      if (between.some((t) => t.from === "DEAD")) continue; // a replay asked for it
      const taken = between.find((t) => t.from === "RUNNING" || t.from === "ARMED");
      const cause = lo === hi ? "same_token" : causeOf(taken);
      byCause[cause] = (byCause[cause] ?? 0) + 1;
      total++;
    }
  }
  return { total, by_cause: byCause };
}

const countBy = <T>(items: readonly T[], key: (item: T) => string): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const item of items) out[key(item)] = (out[key(item)] ?? 0) + 1;
  return out;
};

export function buildReport(f: RunFacts): ChaosReport {
  const requests: Record<string, Record<string, number>> = {};
  for (const r of f.requests) {
    const byStatus = requests[r.op] ?? {};
    byStatus[String(r.status)] = (byStatus[String(r.status)] ?? 0) + 1;
    requests[r.op] = byStatus;
  }
  return {
    seed: f.seed,
    minutes: f.minutes,
    rate_per_s: f.ratePerS,
    fault_kinds: [...f.faultKinds],
    started_at: new Date(f.startedAtMs).toISOString(),
    acked: new Set(f.history.submitted.map((t) => t.taskId)).size,
    executions: f.history.executions.length,
    tasks_by_status: countBy(f.history.tasks, (t) => t.status),
    requests,
    not_sent: f.notSent,
    faults: countBy(f.faults, (x) => x.kind),
    fault_log: [...f.faults],
    crashes: [...f.crashes],
    quiesced: f.quiesced,
    violations: f.verdicts.reduce((n, v) => n + v.violations, 0),
    invariants: Object.fromEntries(
      f.verdicts.map((v) => [
        v.rule,
        { ok: v.ok, violations: v.violations, counterexamples: v.counterexamples },
      ]),
    ),
    lateness: latenessAroundFaults(f.history, f.faults),
    duplicates: duplicatesByCause(f.history),
    reconcile_pass: f.reconcile,
    timeline: [...f.timeline],
  };
}

const row = (cells: readonly unknown[]) => `| ${cells.join(" | ")} |`;

export function renderMarkdown(r: ChaosReport): string {
  const lines = [
    `# Chaos run, seed ${r.seed}`,
    "",
    `${r.minutes} min of workload at ~${r.rate_per_s} tasks/s from ${r.started_at}; faults: ${r.fault_kinds.join(", ") || "none"}.`,
    `${r.acked} tasks acknowledged, ${r.executions} handler runs; quiesced: ${r.quiesced ? "yes" : "NO"}; ` +
      `**${r.violations} invariant violation(s)**.`,
    "",
    "## Invariants",
    "",
    row(["rule", "verdict", "violations", "counterexamples"]),
    row(["---", "---", "---", "---"]),
    ...Object.entries(r.invariants).map(([rule, v]) =>
      row([
        rule,
        v.ok ? "ok" : "**violated**",
        v.violations,
        v.counterexamples.join("<br>") || "—",
      ]),
    ),
    "",
    "## Faults",
    "",
    row(["kind", "count"]),
    row(["---", "---"]),
    ...Object.entries(r.faults).map(([k, n]) => row([k, n])),
    "",
    row(["start", "held s", "kind", "target", "what", "error"]),
    row(["---", "---", "---", "---", "---", "---"]),
    ...r.fault_log.map((f) =>
      row([
        new Date(f.startMs).toISOString().slice(11, 23),
        ((f.endMs - f.startMs) / 1000).toFixed(1),
        f.kind,
        f.target || "—",
        f.detail,
        f.error ?? "",
      ]),
    ),
    "",
    `Processes that exited unasked: ${r.crashes.length === 0 ? "none" : r.crashes.map((c) => `${c.nodeId} (${c.code ?? c.signal})`).join(", ")}.`,
    "",
    "## Lateness (handler start − run_at of the attempt, ms)",
    "",
    row(["runs due", "count", "p50", "p99", "max"]),
    row(["---", "---", "---", "---", "---"]),
    ...(["during_faults", "outside_faults"] as const).map((k) => {
      const l = r.lateness[k];
      return row([k.replace("_", " "), l.count, l.p50_ms, l.p99_ms, l.max_ms]);
    }),
    "",
    `## Duplicates (allowed by at least once): ${r.duplicates.total}`,
    "",
    row(["cause", "count"]),
    row(["---", "---"]),
    ...Object.entries(r.duplicates.by_cause).map(([c, n]) => row([c, n])),
    "",
    "## Timeline",
    "",
    "Pending = not terminal; lag = envelopes not committed by the worker groups (critical/standard/bulk/overdue).",
    "",
    row(["time", "pending", "ARMED", "RUNNING", "lag", "members", "processes up"]),
    row(["---", "---", "---", "---", "---", "---", "---"]),
    ...r.timeline.map((p) => {
      const s = p.statuses ?? {};
      const pending = ["WAITING", "SCHEDULED", "ARMED", "RUNNING"].reduce(
        (n, k) => n + (s[k] ?? 0),
        0,
      );
      const queues = ["critical", "standard", "bulk", "overdue"];
      const k = p.kafka;
      return row([
        new Date(p.atMs).toISOString().slice(11, 19),
        p.statuses ? pending : "?",
        s.ARMED ?? 0,
        s.RUNNING ?? 0,
        k ? queues.map((q) => k[q]?.lag ?? "?").join("/") : "?",
        k ? queues.map((q) => k[q]?.members ?? "?").join("/") : "?",
        p.alive,
      ]);
    }),
    "",
    "## Tasks and requests",
    "",
    `Final task states: ${Object.entries(r.tasks_by_status)
      .map(([s, n]) => `${s} ${n}`)
      .join(", ")}.`,
    `Requests by operation and status (0 = no answer): ${Object.entries(r.requests)
      .map(
        ([op, s]) =>
          `${op} {${Object.entries(s)
            .map(([k, n]) => `${k}: ${n}`)
            .join(", ")}}`,
      )
      .join("; ")}; not sent (too many in flight): ${r.not_sent}.`,
    "",
  ];
  return lines.join("\n");
}
