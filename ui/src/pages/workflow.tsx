/**
 * A workflow: its DAG with each node's state (dag/graph.tsx), live while it
 * runs (polled every 2 s, every 5 s past 2,000 nodes), a count per state,
 * and every node in a list that renders only the rows in view, so 10,000
 * nodes cost a few dozen DOM rows.
 */
import { useState } from "preact/hooks";
import { get, request, type Workflow } from "../api.js";
import { Action, ErrorBox, Loading, Status } from "../components/common.js";
import { DagGraph, STATE_COLORS, STATE_ORDER } from "../dag/graph.js";
import { count, instant } from "../format.js";
import { usePoll } from "../poll.js";
import { linkTo, navigate } from "../router.js";

const ROW_PX = 26;
const LIST_PX = 360;

export function WorkflowPage({ id }: { id: string }) {
  const [large, setLarge] = useState(false);
  const {
    data: w,
    error,
    reload,
  } = usePoll(
    async () => {
      const workflow = await get<Workflow>(`/v1/workflows/${encodeURIComponent(id)}`);
      setLarge(workflow.node_count > 2000);
      return workflow;
    },
    large ? 5000 : 2000,
    [id],
  );
  if (!w) return error ? <ErrorBox error={error} /> : <Loading />;
  const counts = new Map<string, number>();
  for (const node of w.nodes) counts.set(node.status, (counts.get(node.status) ?? 0) + 1);
  return (
    <section>
      <h1>
        Workflow <code>{w.id}</code> <Status status={w.status} />
      </h1>
      <ErrorBox error={error} />
      <div class="buttons">
        {w.status === "RUNNING" && (
          <>
            <Action
              name="cancel"
              label="Cancel workflow"
              kind="danger"
              action={async () => {
                await request("DELETE", `/v1/workflows/${w.id}`);
                reload();
              }}
            />
            <span class="muted live">live</span>
          </>
        )}
        <span class="muted">
          {count(w.node_count)} nodes, {count(w.pending_nodes)} pending, created{" "}
          {instant(w.created_at)}
          {w.finished_at && `, finished ${instant(w.finished_at)}`}
          {w.fail_fast && ", fail fast"}
        </span>
      </div>
      <ul class="legend" data-legend>
        {STATE_ORDER.filter((s) => counts.has(s)).map((s) => (
          <li key={s} data-state={s}>
            <i style={{ background: STATE_COLORS[s] }} /> {s} <b>{count(counts.get(s)!)}</b>
          </li>
        ))}
      </ul>
      <DagGraph nodes={w.nodes} onOpen={(taskId) => navigate(`/tasks/${taskId}`)} />
      <h2>Nodes</h2>
      <NodeList workflow={w} />
    </section>
  );
}

function NodeList({ workflow }: { workflow: Workflow }) {
  const [scrollTop, setScrollTop] = useState(0);
  const nodes = workflow.nodes;
  const first = Math.max(0, Math.floor(scrollTop / ROW_PX) - 5);
  const last = Math.min(nodes.length, first + Math.ceil(LIST_PX / ROW_PX) + 10);
  return (
    <div
      class="node-list"
      style={{ height: `${Math.min(LIST_PX, nodes.length * ROW_PX + 2)}px` }}
      onScroll={(e) => setScrollTop((e.target as HTMLDivElement).scrollTop)}
    >
      <div style={{ height: `${nodes.length * ROW_PX}px`, position: "relative" }}>
        {nodes.slice(first, last).map((node, i) => (
          <div
            key={node.key}
            class="node-row"
            data-node={node.key}
            data-status={node.status}
            style={{ top: `${(first + i) * ROW_PX}px`, height: `${ROW_PX}px` }}
          >
            <span class="node-key">
              <a {...linkTo(`/tasks/${node.task_id}`)}>{node.key}</a>
            </span>
            <Status status={node.status} />
            <span class="muted">
              attempt {node.attempt}, {node.trigger_rule}
              {node.depends_on.length > 0 && `, after ${node.depends_on.slice(0, 3).join(", ")}`}
              {node.depends_on.length > 3 && ` +${node.depends_on.length - 3}`}
            </span>
          </div>
        ))}
      </div>
    </div>
  );
}
