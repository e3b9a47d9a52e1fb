/**
 * The workflow's DAG on a canvas: levels left to right (layout.ts), each node
 * a box in its task's state colour. A level wider than COLLAPSE_AT nodes is
 * drawn collapsed, as one block split by state (click it to expand; a
 * button folds them again), and edges into and out of it are bundled, so a 10,000-node
 * fan-out draws as a handful of shapes. A canvas, not SVG: its cost does not
 * grow with DOM nodes, and only what is on screen is drawn. An expanded wide
 * level wraps into sub-columns, so 10,000 nodes fit as a grid. Drag to pan,
 * wheel to zoom, click a node to open its task.
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { WorkflowNode } from "../api.js";
import { type DagLayout, layoutDag } from "./layout.js";

export const COLLAPSE_AT = 150;
/**
 * An expanded level taller than MIN_WRAP rows wraps into side-by-side
 * sub-columns of about √(2.7·n) rows: a level of n nodes then fills a box of
 * roughly the canvas's shape (a 10,000-node level: 165 rows × 61 columns).
 */
const MIN_WRAP = 60;
const rowsFor = (n: number) =>
  n <= MIN_WRAP ? Math.max(1, n) : Math.max(MIN_WRAP, Math.ceil(Math.sqrt(n * 2.7)));
const GAP_X = 50;
const SUB_GAP = 8;
const BOX_W = 150;
const BOX_H = 20;
const ROW_H = 28;
const BLOCK_H = 240;
const PAD = 30;

export const STATE_COLORS: Record<string, string> = {
  WAITING: "#b0bec5",
  SCHEDULED: "#90caf9",
  ARMED: "#42a5f5",
  RUNNING: "#ffb300",
  COMPLETED: "#43a047",
  DEAD: "#e53935",
  CANCELLED: "#757575",
  SKIPPED: "#ce93d8",
  FAILED: "#e53935",
};
export const STATE_ORDER = Object.keys(STATE_COLORS);

interface Geometry {
  /** Top-left of each node's box (NaN when its level is collapsed). */
  x: Float64Array;
  y: Float64Array;
  collapsed: Set<number>;
  /** Left edge, width and rows per sub-column of each level. */
  levelX: number[];
  levelW: number[];
  rowsOf: number[];
  blockY: number;
  width: number;
  height: number;
}

function geometry(layout: DagLayout, expanded: ReadonlySet<number>): Geometry {
  const collapsed = new Set<number>();
  layout.levels.forEach((members, l) => {
    if (members.length > COLLAPSE_AT && !expanded.has(l)) collapsed.add(l);
  });
  const rowsOf = layout.levels.map((m) => rowsFor(m.length));
  const colsOf = layout.levels.map((m, l) =>
    collapsed.has(l) ? 1 : Math.ceil(m.length / rowsOf[l]!),
  );
  const heightOf = (l: number) => (collapsed.has(l) ? BLOCK_H : rowsOf[l]! * ROW_H);
  const height = Math.max(BLOCK_H, ...layout.levels.map((_, l) => heightOf(l)));
  const levelX: number[] = [];
  const levelW: number[] = [];
  let cursor = PAD;
  layout.levels.forEach((_, l) => {
    levelX.push(cursor);
    const w = colsOf[l]! * (BOX_W + SUB_GAP) - SUB_GAP;
    levelW.push(w);
    cursor += w + GAP_X;
  });
  const n = layout.level.length;
  const x = new Float64Array(n).fill(Number.NaN);
  const y = new Float64Array(n).fill(Number.NaN);
  layout.levels.forEach((members, l) => {
    if (collapsed.has(l)) return;
    const top = PAD + (height - heightOf(l)) / 2;
    const rows = rowsOf[l]!;
    for (const node of members) {
      const r = layout.row[node]!;
      x[node] = levelX[l]! + Math.floor(r / rows) * (BOX_W + SUB_GAP);
      y[node] = top + (r % rows) * ROW_H;
    }
  });
  return {
    x,
    y,
    collapsed,
    levelX,
    levelW,
    rowsOf,
    blockY: PAD + (height - BLOCK_H) / 2,
    width: cursor - GAP_X + PAD,
    height: height + PAD * 2,
  };
}

export function DagGraph(props: { nodes: WorkflowNode[]; onOpen: (taskId: string) => void }) {
  const { nodes } = props;
  const shape = useMemo(() => nodes.map((n) => n.key).join("\n"), [nodes]);
  const layout = useMemo(
    () => layoutDag(nodes.map((n) => ({ key: n.key, dependsOn: n.depends_on }))),
    [shape],
  );
  const [expanded, setExpanded] = useState<Set<number>>(new Set());
  const geo = useMemo(() => geometry(layout, expanded), [layout, expanded]);
  const canvas = useRef<HTMLCanvasElement>(null);
  const view = useRef({ scale: 1, tx: 0, ty: 0, fitted: false });
  const [, redraw] = useState(0);

  const draw = () => {
    const el = canvas.current;
    if (!el) return;
    const dpr = window.devicePixelRatio || 1;
    const cssW = el.clientWidth;
    const cssH = el.clientHeight;
    if (el.width !== cssW * dpr || el.height !== cssH * dpr) {
      el.width = cssW * dpr;
      el.height = cssH * dpr;
    }
    const v = view.current;
    if (!v.fitted) {
      v.scale = Math.min(1.2, cssW / geo.width, cssH / geo.height);
      v.tx = (cssW - geo.width * v.scale) / 2;
      v.ty = (cssH - geo.height * v.scale) / 2;
      v.fitted = true;
    }
    const ctx = el.getContext("2d")!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssW, cssH);
    ctx.setTransform(dpr * v.scale, 0, 0, dpr * v.scale, dpr * v.tx, dpr * v.ty);
    const visible = {
      x0: -v.tx / v.scale,
      y0: -v.ty / v.scale,
      x1: (cssW - v.tx) / v.scale,
      y1: (cssH - v.ty) / v.scale,
    };
    drawEdges(ctx, layout, geo, visible);
    drawBlocks(ctx, layout, geo, nodes);
    drawNodes(ctx, layout, geo, nodes, visible, v.scale);
  };

  useEffect(draw);
  useEffect(() => {
    const onResize = () => draw();
    window.addEventListener("resize", onResize);
    return () => window.removeEventListener("resize", onResize);
  });

  const toWorld = (event: MouseEvent) => {
    const rect = canvas.current!.getBoundingClientRect();
    const v = view.current;
    return {
      x: (event.clientX - rect.left - v.tx) / v.scale,
      y: (event.clientY - rect.top - v.ty) / v.scale,
    };
  };
  const drag = useRef<{ x: number; y: number; moved: boolean } | null>(null);
  const onClick = (event: MouseEvent) => {
    if (drag.current?.moved) return;
    const { x, y } = toWorld(event);
    const l = geo.levelX.findIndex((left, i) => x >= left && x <= left + geo.levelW[i]!);
    const members = layout.levels[l];
    if (!members) return;
    if (geo.collapsed.has(l)) {
      if (y < geo.blockY || y > geo.blockY + BLOCK_H) return;
      const next = new Set(expanded);
      next.add(l);
      setExpanded(next);
      view.current.fitted = false;
      return;
    }
    const rows = geo.rowsOf[l]!;
    const sub = Math.floor((x - geo.levelX[l]!) / (BOX_W + SUB_GAP));
    const top = Math.min(...members.slice(0, rows).map((node) => geo.y[node]!));
    const r = sub * rows + Math.floor((y - top) / ROW_H);
    const node = members[r];
    if (node === undefined || x - geo.x[node]! > BOX_W || y - geo.y[node]! > BOX_H || y < top)
      return;
    props.onOpen(nodes[node]!.task_id);
  };

  return (
    <div class="dag">
      <div class="buttons">
        <button
          type="button"
          onClick={() => {
            view.current.fitted = false;
            redraw((n) => n + 1);
          }}
        >
          Fit
        </button>
        {layout.levels.some((m) => m.length > COLLAPSE_AT) && (
          <button
            type="button"
            onClick={() => {
              setExpanded(expanded.size > 0 ? new Set() : new Set(layout.levels.map((_, l) => l)));
              view.current.fitted = false;
            }}
          >
            {expanded.size > 0 ? "Collapse wide levels" : "Expand every level"}
          </button>
        )}
        <span class="muted">
          {layout.levels.length} levels; levels over {COLLAPSE_AT} nodes are drawn as one block
          (click to expand). Drag to pan, wheel to zoom, click a node to open its task.
        </span>
      </div>
      <canvas
        ref={canvas}
        class="dag-canvas"
        onClick={onClick}
        onMouseDown={(e) => {
          drag.current = { x: e.clientX, y: e.clientY, moved: false };
        }}
        onMouseMove={(e) => {
          const d = drag.current;
          if (!d || e.buttons !== 1) return;
          if (Math.abs(e.clientX - d.x) + Math.abs(e.clientY - d.y) > 3) d.moved = true;
          view.current.tx += e.clientX - d.x;
          view.current.ty += e.clientY - d.y;
          d.x = e.clientX;
          d.y = e.clientY;
          draw();
        }}
        onMouseUp={() => {
          setTimeout(() => {
            drag.current = null;
          }, 0);
        }}
        onWheel={(e) => {
          e.preventDefault();
          const rect = canvas.current!.getBoundingClientRect();
          const v = view.current;
          const factor = Math.exp(-e.deltaY * 0.0015);
          const px = e.clientX - rect.left;
          const py = e.clientY - rect.top;
          v.tx = px - (px - v.tx) * factor;
          v.ty = py - (py - v.ty) * factor;
          v.scale *= factor;
          draw();
        }}
      />
    </div>
  );
}

interface Box {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

/** Each edge once; an end in a collapsed level is that level's block, so edges bundle there. */
function drawEdges(ctx: CanvasRenderingContext2D, layout: DagLayout, geo: Geometry, visible: Box) {
  const seen = new Set<string>();
  ctx.strokeStyle = "rgba(90, 100, 110, 0.45)";
  ctx.lineWidth = 1;
  ctx.beginPath();
  const end = (node: number, out: boolean): [number, number, string] => {
    const l = layout.level[node]!;
    if (geo.collapsed.has(l)) {
      const x = geo.levelX[l]! + (out ? BOX_W : 0);
      return [x, geo.blockY + BLOCK_H / 2, `L${l}`];
    }
    return [geo.x[node]! + (out ? BOX_W : 0), geo.y[node]! + BOX_H / 2, String(node)];
  };
  for (const [p, c] of layout.edges) {
    const [x0, y0, a] = end(p, true);
    const [x1, y1, b] = end(c, false);
    const id = `${a}>${b}`;
    if (seen.has(id)) continue;
    seen.add(id);
    if (Math.max(x0, x1) < visible.x0 || Math.min(x0, x1) > visible.x1) continue;
    if (Math.max(y0, y1) < visible.y0 || Math.min(y0, y1) > visible.y1) continue;
    const mid = (x0 + x1) / 2;
    ctx.moveTo(x0, y0);
    ctx.bezierCurveTo(mid, y0, mid, y1, x1, y1);
  }
  ctx.stroke();
}

function drawBlocks(
  ctx: CanvasRenderingContext2D,
  layout: DagLayout,
  geo: Geometry,
  nodes: WorkflowNode[],
) {
  for (const l of geo.collapsed) {
    const members = layout.levels[l]!;
    const counts = new Map<string, number>();
    for (const node of members) {
      const s = nodes[node]!.status;
      counts.set(s, (counts.get(s) ?? 0) + 1);
    }
    const x = geo.levelX[l]!;
    let y = geo.blockY;
    for (const state of STATE_ORDER) {
      const c = counts.get(state) ?? 0;
      if (c === 0) continue;
      const h = (c / members.length) * BLOCK_H;
      ctx.fillStyle = STATE_COLORS[state]!;
      ctx.fillRect(x, y, BOX_W, h);
      y += h;
    }
    ctx.strokeStyle = "#37474f";
    ctx.strokeRect(x, geo.blockY, BOX_W, BLOCK_H);
    ctx.fillStyle = "#102027";
    ctx.font = "12px system-ui, sans-serif";
    ctx.fillText(`${members.length.toLocaleString("en-US")} nodes`, x + 6, geo.blockY - 6);
  }
}

function drawNodes(
  ctx: CanvasRenderingContext2D,
  layout: DagLayout,
  geo: Geometry,
  nodes: WorkflowNode[],
  visible: Box,
  scale: number,
) {
  const labels = scale * BOX_H >= 11;
  // Zoomed far out a box is drawn at least one pixel tall, so a wide level reads as a state map.
  const h = Math.max(BOX_H, 1 / scale);
  const w = Math.max(BOX_W, 1 / scale);
  ctx.font = "11px system-ui, sans-serif";
  layout.levels.forEach((members, l) => {
    if (geo.collapsed.has(l)) return;
    const left = geo.levelX[l]!;
    if (left > visible.x1 || left + geo.levelW[l]! < visible.x0) return;
    for (const node of members) {
      const x = geo.x[node]!;
      const y = geo.y[node]!;
      if (x > visible.x1 || x + w < visible.x0 || y > visible.y1 || y + h < visible.y0) continue;
      ctx.fillStyle = STATE_COLORS[nodes[node]!.status] ?? "#ccc";
      ctx.fillRect(x, y, w, h);
      if (labels) {
        ctx.fillStyle = "#102027";
        ctx.fillText(truncate(nodes[node]!.key, 22), x + 5, y + 14);
      }
    }
  });
}

const truncate = (text: string, max: number) =>
  text.length <= max ? text : `${text.slice(0, max - 1)}…`;
