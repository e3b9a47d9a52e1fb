/** Workflows: the tenant's workflows, newest first, with their progress. */
import { get, query, type WorkflowSummary } from "../api.js";
import { ErrorBox, Loading, Status } from "../components/common.js";
import { Pager, useCursors } from "../components/pager.js";
import { count, instant, shortId } from "../format.js";
import { usePoll } from "../poll.js";
import { linkTo } from "../router.js";

export function WorkflowsPage() {
  const cursors = useCursors();
  const { cursor } = cursors;
  const { data, error } = usePoll(
    () =>
      get<{ workflows: WorkflowSummary[]; next_cursor: string | null }>(
        `/v1/workflows${query({ cursor, limit: 50 })}`,
      ),
    3000,
    [cursor],
  );
  if (!data) return error ? <ErrorBox error={error} /> : <Loading />;
  return (
    <section>
      <h1>Workflows</h1>
      <ErrorBox error={error} />
      {data.workflows.length === 0 ? (
        <p class="muted">No workflows (POST /v1/workflows).</p>
      ) : (
        <table class="grid" data-table="workflows">
          <thead>
            <tr>
              <th>id</th>
              <th>state</th>
              <th>nodes</th>
              <th>pending</th>
              <th>dead</th>
              <th>created</th>
              <th>finished</th>
            </tr>
          </thead>
          <tbody>
            {data.workflows.map((w) => (
              <tr key={w.id} data-workflow={w.id}>
                <td>
                  <a {...linkTo(`/workflows/${w.id}`)} title={w.id}>
                    {shortId(w.id)}
                  </a>
                </td>
                <td>
                  <Status status={w.status} />
                </td>
                <td class="num">{count(w.node_count)}</td>
                <td class="num">{count(w.pending_nodes)}</td>
                <td class="num">{count(w.dead_nodes)}</td>
                <td>{instant(w.created_at)}</td>
                <td>{instant(w.finished_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager cursors={cursors} next={data.next_cursor} />
    </section>
  );
}
