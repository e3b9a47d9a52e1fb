/**
 * A uPlot time series (uPlot: ~45 KB minified, draws thousands of points on
 * a canvas without a framework of its own). Series share the x axis of
 * epoch seconds; gaps are nulls.
 */
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export interface ChartSeries {
  label: string;
  color: string;
  values: Array<number | null>;
}

export function Chart(props: {
  title: string;
  xs: number[];
  series: ChartSeries[];
  /** The y axis' label of a value: a lateness of 20000 reads `20.0 s`, not a clipped `20000 ms`. */
  tick: (value: number) => string;
  height?: number;
}) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = props.series.map((s) => s.label).join("|");

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const options: uPlot.Options = {
      width: Math.max(280, el.clientWidth),
      height: props.height ?? 180,
      legend: { live: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true } },
      axes: [{}, { values: (_u, ticks) => ticks.map(props.tick), size: 60 }],
      series: [
        {},
        ...props.series.map((s) => ({ label: s.label, stroke: s.color, width: 2, spanGaps: true })),
      ],
    };
    plot.current = new uPlot(options, [props.xs, ...props.series.map((s) => s.values)], el);
    const resize = () =>
      plot.current?.setSize({ width: Math.max(280, el.clientWidth), height: props.height ?? 180 });
    window.addEventListener("resize", resize);
    return () => {
      window.removeEventListener("resize", resize);
      plot.current?.destroy();
      plot.current = null;
    };
  }, [shape]);

  useEffect(() => {
    plot.current?.setData([props.xs, ...props.series.map((s) => s.values)]);
  });

  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <div ref={host} />
    </figure>
  );
}
