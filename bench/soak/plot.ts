/**
 * A line chart as a standalone SVG document (pure: node/test/unit/soak/plot.test.ts),
 * written by hand so that the soak needs no plotting dependency: one chart per
 * metric, one polyline per series (a process, a queue), minutes since the
 * start on x, the metric's unit on y from zero (so that growth is not
 * exaggerated by a clipped axis), a legend with each series' verdict.
 */
import type { Sample } from "./growth.js";

export interface PlotLine {
  label: string;
  samples: readonly Sample[];
}

export interface PlotSpec {
  title: string;
  unit: string;
  /** Epoch ms of minute zero. */
  startMs: number;
  lines: readonly PlotLine[];
}

const WIDTH = 640;
const HEIGHT = 300;
const MARGIN = { left: 64, right: 16, top: 32, bottom: 40 };
const COLOURS = [
  "#1f77b4",
  "#d62728",
  "#2ca02c",
  "#9467bd",
  "#ff7f0e",
  "#8c564b",
  "#e377c2",
  "#17becf",
  "#7f7f7f",
  "#bcbd22",
];

export function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A round step for about `ticks` intervals over [0, max]. */
export function niceStep(max: number, ticks = 5): number {
  if (!(max > 0)) return 1;
  const raw = max / ticks;
  const power = 10 ** Math.floor(Math.log10(raw));
  const scaled = raw / power;
  const nice = scaled <= 1 ? 1 : scaled <= 2 ? 2 : scaled <= 5 ? 5 : 10;
  return nice * power;
}

/** 1234567 → "1.23M": tick labels that fit. */
export function shortNumber(value: number): string {
  const abs = Math.abs(value);
  for (const [limit, suffix] of [
    [1e9, "G"],
    [1e6, "M"],
    [1e3, "k"],
  ] as const)
    if (abs >= limit) return `${Number((value / limit).toPrecision(3))}${suffix}`;
  return String(Number(value.toPrecision(3)));
}

export function renderSvg(spec: PlotSpec): string {
  const points = spec.lines.flatMap((l) => l.samples).filter((s) => Number.isFinite(s.value));
  const maxMinutes = Math.max(1, ...points.map((s) => (s.atMs - spec.startMs) / 60_000));
  const minValue = Math.min(0, ...points.map((s) => s.value));
  const maxValue = Math.max(...points.map((s) => s.value), minValue + 1e-9);
  const yStep = niceStep(maxValue - minValue);
  const yTop = Math.ceil(maxValue / yStep) * yStep;
  const yBottom = Math.floor(minValue / yStep) * yStep;
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const x = (atMs: number) => MARGIN.left + (((atMs - spec.startMs) / 60_000) * plotW) / maxMinutes;
  const y = (value: number) =>
    MARGIN.top + plotH - ((value - yBottom) * plotH) / (yTop - yBottom || 1);
  const f = (n: number) => n.toFixed(1);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="11">`,
    `<title>${escapeXml(spec.title)} (${escapeXml(spec.unit)})</title>`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${MARGIN.left}" y="18" font-size="13" font-weight="bold">${escapeXml(spec.title)} (${escapeXml(spec.unit)})</text>`,
  ];
  for (let v = yBottom; v <= yTop + yStep / 2; v += yStep) {
    parts.push(
      `<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${f(y(v))}" y2="${f(y(v))}" stroke="#ddd"/>`,
      `<text x="${MARGIN.left - 4}" y="${f(y(v) + 4)}" text-anchor="end">${shortNumber(v)}</text>`,
    );
  }
  const xStep = niceStep(maxMinutes);
  for (let m = 0; m <= maxMinutes + 1e-9; m += xStep)
    parts.push(
      `<text x="${f(x(spec.startMs + m * 60_000))}" y="${HEIGHT - MARGIN.bottom + 14}" text-anchor="middle">${shortNumber(m)}</text>`,
    );
  parts.push(
    `<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 8}" text-anchor="middle">minutes</text>`,
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#888"/>`,
  );
  spec.lines.forEach((line, i) => {
    const colour = COLOURS[i % COLOURS.length]!;
    const drawn = line.samples.filter((s) => Number.isFinite(s.value));
    if (drawn.length > 0)
      parts.push(
        `<polyline fill="none" stroke="${colour}" stroke-width="1.5" points="${drawn.map((s) => `${f(x(s.atMs))},${f(y(s.value))}`).join(" ")}"/>`,
      );
    const ly = MARGIN.top + 12 + i * 13;
    parts.push(
      `<rect x="${MARGIN.left + 6}" y="${ly - 8}" width="10" height="3" fill="${colour}"/>`,
      `<text x="${MARGIN.left + 20}" y="${ly}">${escapeXml(line.label)}</text>`,
    );
  });
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}
