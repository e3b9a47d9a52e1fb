/**
 * Dead letters: every task that went DEAD and has not been replayed, newest
 * first, with its failure (message, code, reason, attempt, worker, token).
 * Replay one, or tick several and replay the selection: each is one
 * POST /v1/tasks/{id}/replay (four at a time), and each result is shown.
 */
import { useState } from "preact/hooks";
import { ApiError, type DeadLetter, get, query, request } from "../api.js";
import { Action, ErrorBox, Loading } from "../components/common.js";
import { Pager, useCursors } from "../components/pager.js";
import { instant, shortId } from "../format.js";
import { usePoll } from "../poll.js";
import { linkTo } from "../router.js";

type Outcome = { ok: true } | { ok: false; message: string };

async function replayAll(taskIds: string[], done: (id: string, outcome: Outcome) => void) {
  const queue = [...taskIds];
  const worker = async () => {
    for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
      try {
        await request("POST", `/v1/tasks/${id}/replay`);
        done(id, { ok: true });
      } catch (e) {
        done(id, { ok: false, message: e instanceof ApiError ? e.message : String(e) });
      }
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
}

export function DeadLettersPage() {
  const cursors = useCursors();
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [outcomes, setOutcomes] = useState<Map<string, Outcome>>(new Map());
  const { cursor } = cursors;
  const { data, error, reload } = usePoll(
    () =>
      get<{ dead_letters: DeadLetter[]; next_cursor: string | null }>(
        `/v1/dead-letters${query({ cursor, limit: 50 })}`,
      ),
    5000,
    [cursor],
  );
  const replay = async (ids: string[]) => {
    await replayAll(ids, (id, outcome) =>
      setOutcomes((previous) => new Map(previous).set(id, outcome)),
    );
    setSelected(new Set());
    reload();
  };
  if (!data) return error ? <ErrorBox error={error} /> : <Loading />;
  const letters = data.dead_letters;
  const toggle = (taskId: string) => {
    const next = new Set(selected);
    if (next.has(taskId)) next.delete(taskId);
    else next.add(taskId);
    setSelected(next);
  };
  const failedReplays = [...outcomes].filter(([, o]) => !o.ok);
  return (
    <section>
      <h1>Dead letters</h1>
      <ErrorBox error={error} />
      <div class="buttons">
        <Action
          name="replay-selected"
          label={`Replay selected (${selected.size})`}
          kind="primary"
          disabled={selected.size === 0}
          action={() => replay([...selected])}
        />
      </div>
      {failedReplays.length > 0 && (
        <ul class="alerts">
          {failedReplays.map(([id, o]) => (
            <li key={id}>
              {shortId(id)}: {o.ok ? "" : o.message}
            </li>
          ))}
        </ul>
      )}
      {letters.length === 0 ? (
        <p class="muted">No dead letters. Every task that gave up is here until it is replayed.</p>
      ) : (
        <table class="grid" data-table="dead-letters">
          <thead>
            <tr>
              <th>
                <input
                  type="checkbox"
                  aria-label="select all"
                  checked={letters.length > 0 && letters.every((d) => selected.has(d.task_id))}
                  onChange={(e) =>
                    setSelected(
                      (e.target as HTMLInputElement).checked
                        ? new Set(letters.map((d) => d.task_id))
                        : new Set(),
                    )
                  }
                />
              </th>
              <th>task</th>
              <th>type</th>
              <th>died</th>
              <th>why</th>
              <th>attempt</th>
              <th>error</th>
              <th>worker, token</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {letters.map((d) => (
              <tr key={d.id} data-task={d.task_id}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`select ${d.task_id}`}
                    checked={selected.has(d.task_id)}
                    onChange={() => toggle(d.task_id)}
                  />
                </td>
                <td>
                  <a {...linkTo(`/tasks/${d.task_id}`)} title={d.task_id}>
                    {shortId(d.task_id)}
                  </a>
                </td>
                <td>{d.type}</td>
                <td title={d.dead_at}>{instant(d.dead_at)}</td>
                <td>{d.reason}</td>
                <td class="num">
                  {d.attempt}/{d.max_attempts}
                </td>
                <td class="bad clip">
                  {d.error?.code ? `${d.error.code}: ` : ""}
                  {d.error?.message}
                </td>
                <td>
                  {d.worker_id ?? "—"} <code>{d.fencing_token}</code>
                </td>
                <td>
                  <Action name="replay" label="Replay" action={() => replay([d.task_id])} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager cursors={cursors} next={data.next_cursor} />
    </section>
  );
}
