import { get, query, request, type Schedule, type Upcoming } from "../api.js";
import { Action, ErrorBox, Loading, Status } from "../components/common.js";
import { Pager, useCursors } from "../components/pager.js";
import { duration, instant, relative, shortId } from "../format.js";
import { usePoll } from "../poll.js";
import { linkTo } from "../router.js";

export function SchedulesPage() {
  const cursors = useCursors();
  const { cursor } = cursors;
  const { data, error } = usePoll(
    () =>
      get<{ schedules: Schedule[]; next_cursor: string | null }>(
        `/v1/schedules${query({ cursor, limit: 100 })}`,
      ),
    5000,
    [cursor],
  );
  if (!data) return error ? <ErrorBox error={error} /> : <Loading />;
  return (
    <section>
      <h1>Schedules</h1>
      <ErrorBox error={error} />
      {data.schedules.length === 0 ? (
        <p class="muted">No schedules (POST /v1/schedules, or chronofence schedules create).</p>
      ) : (
        <table class="grid" data-table="schedules">
          <thead>
            <tr>
              <th>name</th>
              <th>expression</th>
              <th>zone</th>
              <th>type</th>
              <th>next occurrence</th>
              <th>state</th>
            </tr>
          </thead>
          <tbody>
            {data.schedules.map((s) => (
              <tr key={s.id} data-schedule={s.id}>
                <td>
                  <a {...linkTo(`/schedules/${s.id}`)}>{s.name}</a>
                </td>
                <td>
                  <code>{s.expression}</code>
                </td>
                <td>{s.time_zone}</td>
                <td>{s.type}</td>
                <td>
                  {instant(s.next_occurrence_at)}{" "}
                  <span class="muted">{relative(s.next_occurrence_at)}</span>
                </td>
                <td>{s.paused ? <span class="bad">paused</span> : "active"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager cursors={cursors} next={data.next_cursor} labels={["← previous", "next →"]} />
    </section>
  );
}

export function SchedulePage({ id }: { id: string }) {
  const path = `/v1/schedules/${encodeURIComponent(id)}`;
  const schedule = usePoll(() => get<Schedule>(`${path}?history=50`), 5000, [id]);
  const upcoming = usePoll(() => get<Upcoming>(`${path}/upcoming`), 5000, [id]);
  const s = schedule.data;
  const u = upcoming.data;
  if (!s) return schedule.error ? <ErrorBox error={schedule.error} /> : <Loading />;
  const setPaused = async (paused: boolean) => {
    await request("PATCH", path, { body: { paused } });
    schedule.reload();
    upcoming.reload();
  };
  const sw = u?.dead_mans_switch;
  return (
    <section>
      <h1>
        Schedule {s.name}{" "}
        {s.paused ? (
          <span class="status status-dead">paused</span>
        ) : (
          <span class="status status-completed">active</span>
        )}
      </h1>
      <ErrorBox error={schedule.error ?? upcoming.error} />
      <div class="buttons">
        {s.paused ? (
          <Action name="resume" label="Resume" kind="primary" action={() => setPaused(false)} />
        ) : (
          <Action name="pause" label="Pause" kind="danger" action={() => setPaused(true)} />
        )}
      </div>
      <dl class="facts">
        <dt>expression</dt>
        <dd>
          <code>{s.expression}</code>
        </dd>
        <dt>time zone</dt>
        <dd>{s.time_zone}</dd>
        <dt>task type</dt>
        <dd>
          {s.type} ({s.priority})
        </dd>
        <dt>misfire, overlap</dt>
        <dd>
          {s.misfire_policy}, {s.overlap_policy}
        </dd>
        <dt>jitter</dt>
        <dd>{duration(s.jitter_ms)}</dd>
        <dt>dead man's switch</dt>
        <dd data-switch={sw?.state ?? ""}>
          {!sw
            ? "—"
            : sw.state === "off"
              ? "off (no expect_within_ms)"
              : sw.state === "paused"
                ? "paused with the schedule"
                : sw.state === "ok"
                  ? `ok: each occurrence completes within ${duration(sw.expect_within_ms)}`
                  : `TRIPPED: the occurrence of ${instant(sw.scheduled_for)} has not completed (${sw.status ?? "no run recorded"})`}
        </dd>
      </dl>
      <h2>Next fire instants{u?.paused && " (if resumed)"}</h2>
      {u ? (
        <table class="grid" data-table="next">
          <thead>
            <tr>
              <th>in {u.time_zone}</th>
              <th>your time</th>
              <th>from now</th>
            </tr>
          </thead>
          <tbody>
            {u.next.map((f) => (
              <tr key={f.at}>
                <td>
                  <code>{f.local.replace("T", " ")}</code>
                </td>
                <td>{instant(f.at)}</td>
                <td>{relative(f.at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <Loading />
      )}
      <h2>History</h2>
      {(s.history ?? []).length === 0 ? (
        <p class="muted">No occurrence decided yet.</p>
      ) : (
        <table class="grid" data-table="history">
          <thead>
            <tr>
              <th>occurrence</th>
              <th>outcome</th>
              <th>task</th>
              <th>run_at</th>
              <th>state</th>
              <th>attempt</th>
            </tr>
          </thead>
          <tbody>
            {(s.history ?? []).map((h) => (
              <tr key={h.scheduled_for}>
                <td>
                  {instant(h.scheduled_for)}
                  {h.catch_up && <span class="muted"> (catch-up)</span>}
                </td>
                <td>{h.outcome}</td>
                <td>
                  {h.task_id ? <a {...linkTo(`/tasks/${h.task_id}`)}>{shortId(h.task_id)}</a> : "—"}
                </td>
                <td>{instant(h.run_at)}</td>
                <td>
                  <Status status={h.status ?? "—"} />
                </td>
                <td class="num">{h.attempt ?? "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
