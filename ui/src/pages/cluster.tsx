/**
 * Cluster (the operator's page): needs the operator token (CF_ADMIN_TOKEN),
 * asked here and kept in this tab; without it the page shows nothing. Then:
 * nodes and their roles, each shard's lease owner and epoch with the timers
 * its owner holds, the other leases, Kafka consumer lag per queue, what the
 * reconciler did lately, and every tenant's watchdog alerts. Polls every 3 s.
 */
import { useState } from "preact/hooks";
import { ApiError, type Cluster, request, session } from "../api.js";
import { ErrorBox, Json, Loading } from "../components/common.js";
import { count, instant, relative } from "../format.js";
import { usePoll } from "../poll.js";

export function ClusterPage() {
  const [token, setToken] = useState(session.adminToken());
  if (token === null) return <TokenForm onToken={setToken} />;
  return (
    <ClusterView
      token={token}
      onRefused={() => {
        session.setAdminToken(null);
        setToken(null);
      }}
    />
  );
}

function TokenForm({ onToken }: { onToken: (token: string) => void }) {
  const [value, setValue] = useState("");
  const [error, setError] = useState<string | null>(null);
  return (
    <section>
      <h1>Cluster</h1>
      <form
        class="token-form"
        onSubmit={async (e) => {
          e.preventDefault();
          try {
            await request("GET", "/v1/cluster", { token: value.trim() });
            session.setAdminToken(value.trim());
            onToken(value.trim());
          } catch (err) {
            setError(
              err instanceof ApiError && err.status === 401
                ? err.message
                : `Could not check the token: ${(err as Error).message}`,
            );
          }
        }}
      >
        <p class="muted">
          The cluster view is for operators: it needs the API's <code>CF_ADMIN_TOKEN</code>, not a
          tenant's key.
        </p>
        <label>
          Operator token
          <input
            name="admin-token"
            type="password"
            autocomplete="off"
            value={value}
            onInput={(e) => setValue((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" class="primary" disabled={value.trim() === ""}>
          Show the cluster
        </button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </section>
  );
}

function ClusterView({ token, onRefused }: { token: string; onRefused: () => void }) {
  const { data: c, error } = usePoll(
    async () => {
      try {
        return await request<Cluster>("GET", "/v1/cluster", { token });
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) onRefused();
        throw e;
      }
    },
    3000,
    [token],
  );
  if (!c) return error ? <ErrorBox error={error} /> : <Loading />;
  const now = Date.parse(c.now);
  // Numbered families (preload:N, plan:N) read best as "which owner holds how many".
  const numbered = new Map<
    string,
    { family: string; owner: string; shards: number[]; live: boolean }
  >();
  const otherLeases = c.leases.filter((l) => {
    const m = /^(preload|plan):(\d+)$/.exec(l.name);
    if (l.name.startsWith("shard:")) return false;
    if (!m) return true;
    const key = `${m[1]}|${l.owner}|${l.live}`;
    const entry = numbered.get(key) ?? { family: m[1]!, owner: l.owner, shards: [], live: l.live };
    entry.shards.push(Number(m[2]));
    numbered.set(key, entry);
    return false;
  });
  const reconciler = c.reconciler?.activity as
    | {
        leader?: boolean;
        runs?: number;
        last_run_at_ms?: number | null;
        totals?: unknown;
        last_repair?: unknown;
        last_repair_at_ms?: number | null;
      }
    | null
    | undefined;
  return (
    <section>
      <h1>Cluster</h1>
      <ErrorBox error={error} />
      <h2>Nodes</h2>
      <table class="grid" data-table="nodes">
        <thead>
          <tr>
            <th>node</th>
            <th>roles</th>
            <th>host, pid</th>
            <th>up since</th>
            <th>last report</th>
            <th>timers in its wheel</th>
          </tr>
        </thead>
        <tbody>
          {c.nodes.map((n) => {
            const wheel = (n.report.dispatcher as { wheel_timers?: number } | undefined)
              ?.wheel_timers;
            return (
              <tr
                key={`${n.node_id}-${n.roles.join()}`}
                class={n.live ? "" : "gone"}
                data-node={n.node_id}
              >
                <td>
                  <code>{n.node_id}</code>
                </td>
                <td>{n.roles.join(", ")}</td>
                <td>
                  {n.host}, {n.pid}
                </td>
                <td>{instant(n.started_at)}</td>
                <td>
                  {relative(n.seen_at, now)} {n.live ? "" : <span class="bad">(gone)</span>}
                </td>
                <td class="num">{wheel === undefined ? "—" : count(wheel)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <h2>Dispatch shards</h2>
      <div class="shards" data-table="shards">
        {c.shards.map((s) => (
          <div key={s.shard} class={`shard ${s.live ? "" : "expired"}`} data-shard={s.shard}>
            <div class="shard-title">shard {s.shard}</div>
            <div>
              <code>{s.owner ?? "no owner"}</code>
            </div>
            <div>epoch {s.epoch ?? "—"}</div>
            <div>{s.live ? `${s.timers === null ? "—" : count(s.timers)} timers` : "expired"}</div>
          </div>
        ))}
      </div>
      <h2>Kafka consumer lag</h2>
      {"error" in c.kafka_lag ? (
        <p class="error">Kafka: {c.kafka_lag.error}</p>
      ) : c.kafka_lag.queues.length === 0 ? (
        <p class="muted">No task topics yet.</p>
      ) : (
        <table class="grid" data-table="lag">
          <thead>
            <tr>
              <th>queue</th>
              <th>topic</th>
              <th>group</th>
              <th>lag</th>
            </tr>
          </thead>
          <tbody>
            {c.kafka_lag.queues.map((q) => (
              <tr key={q.queue}>
                <td>{q.queue}</td>
                <td>
                  <code>{q.topic}</code>
                </td>
                <td>
                  <code>{q.group}</code>
                </td>
                <td class="num">{count(q.lag)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Reconciler</h2>
      {!c.reconciler || !reconciler ? (
        <p class="muted">No reconciler has reported.</p>
      ) : (
        <dl class="facts">
          <dt>leader</dt>
          <dd>
            <code>{c.reconciler.node_id}</code>
          </dd>
          <dt>runs</dt>
          <dd>
            {count(reconciler.runs ?? 0)}, last{" "}
            {reconciler.last_run_at_ms
              ? relative(new Date(reconciler.last_run_at_ms).toISOString(), now)
              : "never"}
          </dd>
          <dt>repaired in total</dt>
          <dd>
            <Json value={reconciler.totals} />
          </dd>
          <dt>last repair</dt>
          <dd>
            {reconciler.last_repair_at_ms
              ? relative(new Date(reconciler.last_repair_at_ms).toISOString(), now)
              : "none"}
            {reconciler.last_repair != null && <Json value={reconciler.last_repair} />}
          </dd>
        </dl>
      )}
      <h2>Watchdog alerts</h2>
      {c.alerts.length === 0 ? (
        <p class="muted">No watchdog has reported (chronofence watchdog).</p>
      ) : (
        <table class="grid" data-table="alerts">
          <thead>
            <tr>
              <th>tenant</th>
              <th>alert</th>
              <th>state</th>
              <th>message</th>
              <th>since</th>
            </tr>
          </thead>
          <tbody>
            {c.alerts.map((a) => (
              <tr key={`${a.tenant_id}-${a.key}`}>
                <td>
                  <code>{a.tenant_id.slice(-12)}</code>
                </td>
                <td>{a.key}</td>
                <td class={a.state === "firing" ? "bad" : "ok"}>{a.state}</td>
                <td>{a.message}</td>
                <td>{instant(a.state === "firing" ? a.fired_at : a.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Pre-loader and planner shards</h2>
      {numbered.size === 0 ? (
        <p class="muted">No pre-loader or planner holds a shard.</p>
      ) : (
        <table class="grid" data-table="families">
          <thead>
            <tr>
              <th>role</th>
              <th>owner</th>
              <th>shards</th>
            </tr>
          </thead>
          <tbody>
            {[...numbered.values()].map((f) => (
              <tr key={`${f.family}-${f.owner}-${f.live}`} class={f.live ? "" : "gone"}>
                <td>{f.family === "plan" ? "planner" : "pre-loader"}</td>
                <td>
                  <code>{f.owner}</code>
                </td>
                <td>
                  {f.shards.sort((x, y) => x - y).join(", ")}
                  {f.live ? "" : " (expired)"}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Other leases</h2>
      <table class="grid" data-table="leases">
        <thead>
          <tr>
            <th>lease</th>
            <th>owner</th>
            <th>epoch</th>
            <th>expires</th>
          </tr>
        </thead>
        <tbody>
          {otherLeases.map((l) => (
            <tr key={l.name} class={l.live ? "" : "gone"}>
              <td>
                <code>{l.name}</code>
              </td>
              <td>
                <code>{l.owner}</code>
              </td>
              <td class="num">{l.epoch}</td>
              <td>{l.live ? relative(l.expires_at, now) : "expired"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
