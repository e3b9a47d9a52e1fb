/** The soak's SVG writer and its report on hand-made series. */
import { describe, expect, it } from "vitest";
import type { Sample } from "../../../../bench/soak/growth.js";
import { escapeXml, niceStep, renderSvg, shortNumber } from "../../../../bench/soak/plot.js";
import { judgeAll, plots, renderMarkdown } from "../../../../bench/soak/report.js";
import type { SeriesSet } from "../../../../bench/soak/sampler.js";

const START = 1_700_000_000_000;
const series = (minutes: number, f: (m: number) => number): Sample[] =>
  Array.from({ length: minutes + 1 }, (_, m) => ({ atMs: START + m * 60_000, value: f(m) }));

/** The polylines' points as numbers. */
const polylines = (svg: string) =>
  [...svg.matchAll(/<polyline [^>]*points="([^"]*)"/g)].map((m) =>
    m[1]!.split(" ").map((p) => p.split(",").map(Number) as [number, number]),
  );

describe("renderSvg", () => {
  it("draws one polyline per series, left to right, higher values higher up", () => {
    const svg = renderSvg({
      title: "RSS",
      unit: "bytes",
      startMs: START,
      lines: [
        { label: "api-1", samples: series(10, (m) => 100 + m) },
        { label: "api-2", samples: series(10, () => 50) },
      ],
    });
    expect(svg.startsWith("<svg ")).toBe(true);
    expect(svg.trim().endsWith("</svg>")).toBe(true);
    const [rising, flat] = polylines(svg);
    expect(rising).toHaveLength(11);
    expect(rising![10]![0]).toBeGreaterThan(rising![0]![0]);
    // SVG's y grows downwards: a rising series ends nearer the top.
    expect(rising![10]![1]).toBeLessThan(rising![0]![1]);
    expect(new Set(flat!.map(([, y]) => y)).size).toBe(1);
    expect(flat![0]![1]).toBeGreaterThan(rising![0]![1]);
    expect(svg).toContain(">api-1<");
    expect(svg).toContain(">api-2<");
  });

  it("leaves NaN samples out of the line, escapes labels, and survives an all-zero series", () => {
    const svg = renderSvg({
      title: "lag <queue> & more",
      unit: "messages",
      startMs: START,
      lines: [{ label: `a"b`, samples: series(4, (m) => (m === 2 ? Number.NaN : 0)) }],
    });
    expect(polylines(svg)[0]).toHaveLength(4);
    expect(svg).not.toContain("NaN");
    expect(svg).toContain("lag &#60;queue&#62; &#38; more");
    expect(svg).toContain("a&#34;b");
  });

  it("chooses round ticks and short labels", () => {
    expect(niceStep(1000)).toBe(200);
    expect(niceStep(7)).toBe(2);
    expect(niceStep(0)).toBe(1);
    expect(shortNumber(1_234_567)).toBe("1.23M");
    expect(shortNumber(0.25)).toBe("0.25");
    expect(escapeXml("<&>")).toBe("&#60;&#38;&#62;");
  });
});

describe("the soak report", () => {
  const set = (): SeriesSet =>
    new Map([
      [
        "rss_bytes",
        new Map([
          ["worker-1", series(60, (m) => 100e6 + m * 1e6)],
          ["worker-2", series(60, () => 100e6)],
        ]),
      ],
      ["consumer_lag", new Map([["standard", series(60, (m) => m % 3)]])],
    ]);

  it("judges every series under its metric's rule and counts the growing ones", () => {
    const verdicts = judgeAll(set());
    expect(verdicts.grows).toBe(1);
    expect(verdicts.series.find((s) => s.label === "worker-1")?.verdict).toBe("grows");
    expect(verdicts.series.find((s) => s.label === "worker-2")?.verdict).toBe("flat");
    expect(verdicts.series.find((s) => s.label === "standard")?.verdict).toBe("flat");
    const page = renderMarkdown({
      minutes: 60,
      ratePerS: 100,
      sampleS: 60,
      startedAt: new Date(START).toISOString(),
      load: { tasksAccepted: 1 },
      loadAverage: ["1.00/1.00/1.00"],
      verdicts,
    });
    expect(page).toContain("**1 series grow**");
    expect(page).toContain("| rss_bytes | worker-1 | **grows** |");
  });

  it("writes one SVG per metric, each line labelled with its verdict", () => {
    const s = set();
    const files = plots(s, judgeAll(s), START);
    expect([...files.keys()].sort()).toEqual(["consumer_lag.svg", "rss_bytes.svg"]);
    expect(files.get("rss_bytes.svg")).toContain("worker-1: grows");
    expect(files.get("rss_bytes.svg")).toContain("worker-2: flat");
  });

  it("refuses a metric it has no rule for", () => {
    expect(() => judgeAll(new Map([["mystery", new Map([["x", series(10, () => 1)]])]]))).toThrow(
      /no growth rule for the soak metric mystery/,
    );
  });
});
