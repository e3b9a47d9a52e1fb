/**
 * A task's page: what it is, its timeline (created → armed → published →
 * started → finished, each instant and its lateness against run_at, drawn on
 * a symmetric log scale around run_at so 2 ms and 2 hours both read), every
 * attempt with its fencing token, worker, error and result, and the Cancel
 * and Replay buttons where the state allows them. Polls every 2 s until the
 * task is terminal.
 */
import { get, request, type Stage, type TaskHistory } from "../api.js";
import { Action, ErrorBox, Json, Loading, Status } from "../components/common.js";
import { duration, instant, lateness } from "../format.js";
import { usePoll } from "../poll.js";
import { linkTo } from "../router.js";

const TERMINAL = new Set(["COMPLETED", "DEAD", "CANCELLED", "SKIPPED"]);
const CANCELLABLE = new Set(["WAITING", "SCHEDULED", "ARMED"]);

export function TaskPage({ id }: { id: string }) {
  const { data, error, reload } = usePoll(
    () => get<TaskHistory>(`/v1/tasks/${encodeURIComponent(id)}/history`),
    2000,
    [id],
  );
  if (!data) return error ? <ErrorBox error={error} /> : <Loading />;
  const { task } = data;
  return (
    <section>
      <h1>
        Task <code>{task.id}</code> <Status status={task.status} />
      </h1>
      <ErrorBox error={error} />
      <div class="buttons">
        {CANCELLABLE.has(task.status) && (
          <Action
            name="cancel"
            label="Cancel"
            kind="danger"
            action={async () => {
              await request("DELETE", `/v1/tasks/${task.id}`);
              reload();
            }}
          />
        )}
        {task.status === "DEAD" && (
          <Action
            name="replay"
            label="Replay"
            kind="primary"
            action={async () => {
              await request("POST", `/v1/tasks/${task.id}/replay`);
              reload();
            }}
          />
        )}
        {!TERMINAL.has(task.status) && <span class="muted live">live</span>}
      </div>
      <dl class="facts">
        <dt>type</dt>
        <dd>{task.type}</dd>
        <dt>priority</dt>
        <dd>{task.priority}</dd>
        <dt>run_at</dt>
        <dd title={task.run_at}>{instant(task.run_at)}</dd>
        <dt>attempt</dt>
        <dd>
          {task.attempt} of {task.max_attempts}
        </dd>
        <dt>fencing token</dt>
        <dd>
          <code>{data.fencing_token ?? "—"}</code>
        </dd>
        <dt>lease</dt>
        <dd>
          {data.lease_owner ?? "—"}
          {data.lease_expires_at && ` until ${instant(data.lease_expires_at)}`}
        </dd>
        <dt>dispatched by</dt>
        <dd>
          {data.dispatch_shard === null
            ? "—"
            : `shard ${data.dispatch_shard}, epoch ${data.dispatch_epoch}`}
        </dd>
        <dt>idempotency key</dt>
        <dd>{task.idempotency_key ?? "—"}</dd>
        {task.workflow_id && (
          <>
            <dt>workflow</dt>
            <dd>
              <a {...linkTo(`/workflows/${task.workflow_id}`)}>{task.workflow_id}</a>
            </dd>
          </>
        )}
        {task.schedule_id && (
          <>
            <dt>schedule</dt>
            <dd>
              <a {...linkTo(`/schedules/${task.schedule_id}`)}>{task.schedule_id}</a>
            </dd>
          </>
        )}
      </dl>
      <h2>Timeline</h2>
      <LatenessStrip stages={data.timeline} />
      <table class="grid" data-table="timeline">
        <thead>
          <tr>
            <th>stage</th>
            <th>instant</th>
            <th>against run_at</th>
            <th>since the stage before</th>
          </tr>
        </thead>
        <tbody>
          {data.timeline.map((s, i) => {
            const before = data.timeline
              .slice(0, i)
              .reverse()
              .find((b) => b.at !== null);
            const gap = s.at && before?.at ? Date.parse(s.at) - Date.parse(before.at) : null;
            return (
              <tr key={s.stage} data-stage={s.stage}>
                <td>
                  {s.stage}
                  {s.outcome && (
                    <>
                      {" "}
                      <Status status={s.outcome} />
                    </>
                  )}
                </td>
                <td title={s.at ?? ""}>{instant(s.at)}</td>
                <td class={s.lateness_ms !== null && s.lateness_ms > 0 ? "late" : ""}>
                  {s.stage === "created" ? "—" : lateness(s.lateness_ms)}
                </td>
                <td>{gap === null ? "—" : duration(gap)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <h2>Attempts</h2>
      {data.attempts.length === 0 ? (
        <p class="muted">Not started yet.</p>
      ) : (
        <table class="grid" data-table="attempts">
          <thead>
            <tr>
              <th>#</th>
              <th>outcome</th>
              <th>fencing token</th>
              <th>worker</th>
              <th>started</th>
              <th>ran for</th>
              <th>error or result</th>
            </tr>
          </thead>
          <tbody>
            {data.attempts.map((a) => (
              <tr
                key={`${a.attempt}-${a.fencing_token}`}
                data-attempt={a.attempt}
                data-outcome={a.outcome}
              >
                <td class="num">{a.attempt}</td>
                <td>{a.outcome}</td>
                <td>
                  <code>{a.fencing_token ?? "—"}</code>
                </td>
                <td>{a.worker_id ?? "—"}</td>
                <td title={a.started_at ?? ""}>{instant(a.started_at)}</td>
                <td>{duration(a.duration_ms)}</td>
                <td>
                  {a.error ? (
                    <span class="bad">
                      {a.error.code ? `${a.error.code}: ` : ""}
                      {a.error.message}
                    </span>
                  ) : a.result !== undefined ? (
                    <Json value={a.result} />
                  ) : (
                    "—"
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Payload</h2>
      <Json value={task.payload} />
      {task.last_error && (
        <>
          <h2>Last error</h2>
          <Json value={task.last_error} />
        </>
      )}
    </section>
  );
}

const TICKS_MS = [1, 10, 100, 1000, 10_000, 60_000, 600_000, 3_600_000, 86_400_000];
const COLORS: Record<Stage["stage"], string> = {
  created: "#607d8b",
  armed: "#1565c0",
  published: "#ef6c00",
  started: "#6a1b9a",
  finished: "#2e7d32",
};

/** Each stage's offset from run_at on a symmetric log scale: 0 in the middle. */
function LatenessStrip({ stages }: { stages: Stage[] }) {
  const known = stages.filter((s) => s.at !== null && s.lateness_ms !== null);
  const createdAt = stages[0]?.at ? Date.parse(stages[0].at) : null;
  const runAt = known.length > 0 ? Date.parse(known[0]!.at!) - known[0]!.lateness_ms! : null;
  const points = stages
    .filter((s) => s.at !== null)
    .map((s) => ({
      stage: s.stage,
      offsetMs:
        s.stage === "created" && runAt !== null && createdAt !== null
          ? createdAt - runAt
          : s.lateness_ms,
    }))
    .filter((p): p is { stage: Stage["stage"]; offsetMs: number } => p.offsetMs !== null);
  if (points.length === 0) return null;
  const maxAbs = Math.max(10, ...points.map((p) => Math.abs(p.offsetMs)));
  const W = 760;
  const half = W / 2 - 40;
  const log = (ms: number) => Math.log10(1 + Math.abs(ms));
  const x = (ms: number) => W / 2 + Math.sign(ms) * (log(ms) / log(maxAbs)) * half;
  const ticks = TICKS_MS.filter((t) => t <= maxAbs * 1.01);
  const labelled = placeLabels(points.map((p) => ({ ...p, x: x(p.offsetMs) })));
  return (
    <svg
      class="strip"
      viewBox={`0 0 ${W} 112`}
      role="img"
      aria-label="lateness of each stage against run_at"
    >
      <line x1="20" x2={W - 20} y1="56" y2="56" stroke="#bbb" />
      <line x1={W / 2} x2={W / 2} y1="4" y2="70" stroke="#222" stroke-width="2" />
      <text x={W / 2 + 4} y="12" class="strip-label">
        run_at
      </text>
      {ticks
        .flatMap((t) => [t, -t])
        .map((t) => (
          <g key={t}>
            <line x1={x(t)} x2={x(t)} y1="52" y2="60" stroke="#999" />
            <text x={x(t)} y="108" text-anchor="middle" class="strip-tick">
              {t < 0 ? "−" : "+"}
              {duration(Math.abs(t))}
            </text>
          </g>
        ))}
      {labelled.map((p) => (
        <g key={p.stage}>
          <line
            x1={p.x}
            x2={p.labelX}
            y1="56"
            y2={p.labelY + (p.labelY < 56 ? 3 : -10)}
            stroke={COLORS[p.stage]}
          />
          <circle cx={p.x} cy="56" r="5" fill={COLORS[p.stage]} />
          <text
            x={p.labelX}
            y={p.labelY}
            text-anchor="middle"
            class="strip-point"
            fill={COLORS[p.stage]}
          >
            {p.stage}
          </text>
        </g>
      ))}
    </svg>
  );
}

const LANES = [36, 20, 84, 98];
const LABEL_W = 64;

/** Puts each label in the first lane (above, then below the axis) where it overlaps no other. */
function placeLabels<T extends { x: number }>(
  points: T[],
): Array<T & { labelX: number; labelY: number }> {
  const lastEnd = LANES.map(() => Number.NEGATIVE_INFINITY);
  return [...points]
    .sort((a, b) => a.x - b.x)
    .map((p) => {
      let lane = lastEnd.findIndex((end) => end + 4 <= p.x - LABEL_W / 2);
      if (lane < 0) lane = lastEnd.indexOf(Math.min(...lastEnd));
      const labelX = Math.max(p.x, lastEnd[lane]! + 4 + LABEL_W / 2);
      lastEnd[lane] = labelX + LABEL_W / 2;
      return { ...p, labelX, labelY: LANES[lane]! };
    });
}
