/**
 * Overview: what the tenant's tasks are doing now, polled every 2 s —
 * completed/s and failed/s, the lateness of publish and of worker start
 * (p50/p99 over the last five minutes, from what every node recorded), counts
 * by state and priority, overdue tasks, open dead letters, watchdog alerts,
 * and two charts of the last five minutes in 10-second buckets.
 */
import { get, PRIORITIES, type Stats, TASK_STATUSES } from "../api.js";
import { Chart } from "../components/chart.js";
import { Card, ErrorBox, Loading, Status } from "../components/common.js";
import { count, duration, instant, rate } from "../format.js";
import { usePoll } from "../poll.js";
import { linkTo } from "../router.js";

const p = (ms: number | null) => (ms === null ? "—" : duration(ms));

export function OverviewPage() {
  const { data: s, error } = usePoll(() => get<Stats>("/v1/stats"), 2000, []);
  if (!s) return error ? <ErrorBox error={error} /> : <Loading />;
  const cell = (status: string, priority: string) =>
    s.counts.by_state.find((c) => c.status === status && c.priority === priority)?.count ?? 0;
  const statuses = TASK_STATUSES.filter((st) =>
    s.counts.by_state.some((c) => c.status === st && c.count > 0),
  );
  const xs = s.series.map((b) => Date.parse(b.at) / 1000);
  const firing = s.alerts.filter((a) => a.state === "firing");
  return (
    <section>
      <h1>Overview</h1>
      <ErrorBox error={error} />
      <div class="cards">
        <Card id="completed" label="Completed" value={rate(s.completed_per_s)} hint="last minute" />
        <Card id="failed" label="Failed attempts" value={rate(s.failed_per_s)} hint="last minute" />
        <Card
          id="publish"
          label="Publish lateness"
          value={`${p(s.publish_lateness.p50_ms)} / ${p(s.publish_lateness.p99_ms)}`}
          hint={`p50 / p99, ${count(s.publish_lateness.count)} tasks, 5 min`}
        />
        <Card
          id="start"
          label="Start lateness"
          value={`${p(s.start_lateness.p50_ms)} / ${p(s.start_lateness.p99_ms)}`}
          hint={`p50 / p99, ${count(s.start_lateness.count)} tasks, 5 min`}
        />
        <Card
          id="overdue"
          label="Overdue"
          value={count(s.overdue)}
          hint="due past the grace, not started"
        />
        <Card
          id="dead"
          label="Dead letters"
          value={<a {...linkTo("/dead-letters")}>{count(s.open_dead_letters)}</a>}
          hint="not replayed"
        />
        <Card
          id="watchdog"
          label="Watchdog"
          value={
            firing.length === 0 ? (
              <span class="ok">{s.alerts.length === 0 ? "no reports" : "all clear"}</span>
            ) : (
              <span class="bad">{firing.length} firing</span>
            )
          }
        />
      </div>
      {firing.length > 0 && (
        <ul class="alerts">
          {firing.map((a) => (
            <li key={a.key}>
              <strong>{a.key}</strong> {a.message}{" "}
              <span class="muted">since {instant(a.fired_at)}</span>
            </li>
          ))}
        </ul>
      )}
      <div class="charts">
        <Chart
          title="Completed and failed per second"
          tick={(v) => `${v}/s`}
          xs={xs}
          series={[
            {
              label: "completed/s",
              color: "#2e7d32",
              values: s.series.map((b) => b.completed_per_s),
            },
            { label: "failed/s", color: "#c62828", values: s.series.map((b) => b.failed_per_s) },
          ]}
        />
        <Chart
          title="Lateness after run_at"
          tick={duration}
          xs={xs}
          series={[
            { label: "start p50", color: "#1565c0", values: s.series.map((b) => b.start_p50_ms) },
            { label: "start p99", color: "#6a1b9a", values: s.series.map((b) => b.start_p99_ms) },
            {
              label: "publish p99",
              color: "#ef6c00",
              values: s.series.map((b) => b.publish_p99_ms),
            },
          ]}
        />
      </div>
      <h2>Tasks by state and priority</h2>
      <table class="grid" data-table="counts">
        <thead>
          <tr>
            <th>state</th>
            {PRIORITIES.map((pr) => (
              <th key={pr}>{pr}</th>
            ))}
            <th>all</th>
          </tr>
        </thead>
        <tbody>
          {statuses.map((st) => (
            <tr key={st} data-status={st}>
              <td>
                <a {...linkTo(`/tasks?status=${st}`)}>
                  <Status status={st} />
                </a>
              </td>
              {PRIORITIES.map((pr) => (
                <td key={pr} class="num">
                  {count(cell(st, pr))}
                </td>
              ))}
              <td class="num">{count(PRIORITIES.reduce((sum, pr) => sum + cell(st, pr), 0))}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="muted">
        {s.counts.capped
          ? `Counted over the newest ${count(s.counts.counted_rows)} tasks (created since ${instant(s.counts.counted_since)}).`
          : `All ${count(s.counts.counted_rows)} tasks.`}{" "}
        Updated {instant(s.now)}.
      </p>
    </section>
  );
}
