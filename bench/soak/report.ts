/**
 * The soak's verdict and report (pure: node/test/unit/soak/report.test.ts):
 * every sampled series judged by growth.ts under its metric's allowance
 * (RULES: generous enough for noise and slow warm-ups, tight enough that a
 * leak of a few MB per hour in one process fails), one chart per metric
 * (plot.ts), and a Markdown table. A metric with no rule is a programming
 * error, not a pass.
 */
import { type GrowthResult, type GrowthRule, judgeGrowth } from "./growth.js";
import { renderSvg } from "./plot.js";
import type { SeriesSet } from "./sampler.js";

const MiB = 1024 * 1024;

export const RULES: Record<string, GrowthRule & { unit: string; title: string }> = {
  rss_bytes: {
    title: "RSS per process",
    unit: "bytes",
    relativePerHour: 0.15,
    absolutePerHour: 16 * MiB,
  },
  heap_used_bytes: {
    title: "V8 heap used per process",
    unit: "bytes",
    relativePerHour: 0.15,
    absolutePerHour: 8 * MiB,
  },
  event_loop_delay_p99_s: {
    title: "Event-loop delay p99 per process",
    unit: "s",
    relativePerHour: 0.5,
    absolutePerHour: 0.05,
  },
  pg_connections: {
    title: "Postgres connections",
    unit: "connections",
    relativePerHour: 0.1,
    absolutePerHour: 2,
  },
  pg_dead_tuples: {
    title: "Postgres dead tuples",
    unit: "tuples",
    relativePerHour: 0.5,
    absolutePerHour: 20_000,
  },
  redis_used_memory_bytes: {
    title: "Redis used memory",
    unit: "bytes",
    relativePerHour: 0.15,
    absolutePerHour: 8 * MiB,
  },
  consumer_lag: {
    title: "Kafka consumer lag per queue",
    unit: "messages",
    relativePerHour: 0.5,
    absolutePerHour: 1000,
  },
  outbox_depth: {
    title: "Outbox depth (claims past due, unacknowledged)",
    unit: "tasks",
    relativePerHour: 0.5,
    absolutePerHour: 500,
  },
  lease_events_per_interval: {
    title: "Lease churn per interval",
    unit: "events",
    relativePerHour: 0.5,
    absolutePerHour: 10,
  },
  retries_per_interval: {
    title: "Retries per interval",
    unit: "retries",
    relativePerHour: 0.3,
    absolutePerHour: 200,
  },
  dead_letters_per_interval: {
    title: "Dead letters per interval",
    unit: "tasks",
    relativePerHour: 0.3,
    absolutePerHour: 100,
  },
  lateness_p99_ms: {
    title: "Lateness p99 (start − run_at) of the interval's tasks",
    unit: "ms",
    relativePerHour: 0.5,
    absolutePerHour: 500,
  },
  tasks_not_terminal: {
    title: "Tasks not yet terminal (backlog)",
    unit: "tasks",
    relativePerHour: 0.5,
    absolutePerHour: 2000,
  },
};

export interface SeriesVerdict extends GrowthResult {
  metric: string;
  label: string;
  last: number | null;
}

export interface SoakVerdicts {
  series: SeriesVerdict[];
  grows: number;
  tooShort: number;
}

export function judgeAll(series: SeriesSet): SoakVerdicts {
  const out: SeriesVerdict[] = [];
  for (const [metric, byLabel] of series) {
    const rule = RULES[metric];
    if (!rule) throw new Error(`no growth rule for the soak metric ${metric}`);
    for (const [label, samples] of byLabel) {
      const finite = samples.filter((s) => Number.isFinite(s.value));
      out.push({
        metric,
        label,
        last: finite.at(-1)?.value ?? null,
        ...judgeGrowth(samples, rule),
      });
    }
  }
  return {
    series: out,
    grows: out.filter((v) => v.verdict === "grows").length,
    tooShort: out.filter((v) => v.verdict === "too_short").length,
  };
}

/** One SVG per metric, file name → document. */
export function plots(
  series: SeriesSet,
  verdicts: SoakVerdicts,
  startMs: number,
): Map<string, string> {
  const files = new Map<string, string>();
  for (const [metric, byLabel] of series) {
    const rule = RULES[metric]!;
    const verdictOf = (label: string) =>
      verdicts.series.find((v) => v.metric === metric && v.label === label)?.verdict ?? "?";
    const lines = [...byLabel].map(([label, samples]) => ({
      label: `${label}: ${verdictOf(label)}`,
      samples,
    }));
    files.set(`${metric}.svg`, renderSvg({ title: rule.title, unit: rule.unit, startMs, lines }));
  }
  return files;
}

const num = (v: number | null) =>
  v === null ? "—" : Math.abs(v) >= 1000 ? v.toExponential(2) : v.toFixed(3);

export function renderMarkdown(facts: {
  minutes: number;
  ratePerS: number;
  sampleS: number;
  startedAt: string;
  load: Record<string, number>;
  loadAverage: string[];
  verdicts: SoakVerdicts;
}): string {
  const v = facts.verdicts;
  const lines = [
    `# Soak, ${facts.minutes} min at ${facts.ratePerS} tasks/s offered, sampled every ${facts.sampleS} s, from ${facts.startedAt}`,
    "",
    `Verdict: ${v.grows === 0 ? "no series grows" : `**${v.grows} series grow**`}${v.tooShort > 0 ? ` (${v.tooShort} too short to judge)` : ""}.`,
    "",
    `Load: ${Object.entries(facts.load)
      .map(([k, n]) => `${k} ${n}`)
      .join(", ")}. Load average (1/5/15 min) at each sample: ${facts.loadAverage.join("; ")}.`,
    "",
    "| metric | series | verdict | slope / h (2nd half) | allowed / h | median (2nd half) | last |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...v.series.map(
      (s) =>
        `| ${s.metric} | ${s.label} | ${s.verdict === "grows" ? "**grows**" : s.verdict} | ${num(s.slopePerHour)} | ${num(s.allowedPerHour)} | ${num(s.median)} | ${num(s.last)} |`,
    ),
    "",
  ];
  return lines.join("\n");
}
