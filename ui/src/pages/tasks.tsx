/**
 * Tasks: filter by state, type, priority, a run_at range, or one id or
 * idempotency key; newest first, keyset pages. The page polls every 2 s, so
 * a task submitted elsewhere appears, and its state changes, without a reload.
 * Filters live in the URL (/ui/tasks?status=DEAD), so a view can be shared.
 */
import { get, PRIORITIES, query, TASK_STATUSES, type Task } from "../api.js";
import { ErrorBox, Loading, Status } from "../components/common.js";
import { Pager, useCursors } from "../components/pager.js";
import { instant, relative, shortId } from "../format.js";
import { usePoll } from "../poll.js";
import { linkTo, navigate, useRoute } from "../router.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const FILTERS = ["status", "type", "priority", "run_at_from", "run_at_to", "find"] as const;

/** datetime-local (the browser's zone) → RFC 3339 with Z. */
const toIso = (local: string) => (local === "" ? undefined : new Date(local).toISOString());

export function TasksPage() {
  const { search } = useRoute();
  const filters = Object.fromEntries(FILTERS.map((f) => [f, search.get(f) ?? ""])) as Record<
    (typeof FILTERS)[number],
    string
  >;
  const cursors = useCursors();
  const { cursor } = cursors;
  const find = filters.find.trim();
  const path = `/v1/tasks/search${query({
    status: filters.status,
    type: filters.type,
    priority: filters.priority,
    run_at_from: toIso(filters.run_at_from),
    run_at_to: toIso(filters.run_at_to),
    id: UUID.test(find) ? find : undefined,
    idempotency_key: find !== "" && !UUID.test(find) ? find : undefined,
    cursor,
    limit: 50,
  })}`;
  const { data, error } = usePoll(
    () => get<{ tasks: Task[]; next_cursor: string | null }>(path),
    2000,
    [path],
  );
  const setFilter = (name: string, value: string) => {
    const next = new URLSearchParams(search);
    if (value === "") next.delete(name);
    else next.set(name, value);
    cursors.reset();
    const text = next.toString();
    navigate(`/tasks${text === "" ? "" : `?${text}`}`, true);
  };
  return (
    <section>
      <h1>Tasks</h1>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <Choice
          label="state"
          name="status"
          value={filters.status}
          options={TASK_STATUSES}
          onChange={setFilter}
        />
        <label>
          type
          <input
            name="type"
            value={filters.type}
            onChange={(e) => setFilter("type", (e.target as HTMLInputElement).value.trim())}
          />
        </label>
        <Choice
          label="priority"
          name="priority"
          value={filters.priority}
          options={PRIORITIES}
          onChange={setFilter}
        />
        <label>
          run_at from
          <input
            type="datetime-local"
            step="1"
            name="run_at_from"
            value={filters.run_at_from}
            onChange={(e) => setFilter("run_at_from", (e.target as HTMLInputElement).value)}
          />
        </label>
        <label>
          to
          <input
            type="datetime-local"
            step="1"
            name="run_at_to"
            value={filters.run_at_to}
            onChange={(e) => setFilter("run_at_to", (e.target as HTMLInputElement).value)}
          />
        </label>
        <label class="wide">
          id or idempotency key
          <input
            name="find"
            value={filters.find}
            onChange={(e) => setFilter("find", (e.target as HTMLInputElement).value.trim())}
          />
        </label>
      </form>
      <ErrorBox error={error} />
      {!data ? (
        !error && <Loading />
      ) : (
        <>
          <table class="grid" data-table="tasks">
            <thead>
              <tr>
                <th>id</th>
                <th>type</th>
                <th>state</th>
                <th>priority</th>
                <th>run_at</th>
                <th>attempt</th>
                <th>last error</th>
              </tr>
            </thead>
            <tbody>
              {data.tasks.map((t) => (
                <tr key={t.id} data-task={t.id} data-status={t.status}>
                  <td>
                    <a {...linkTo(`/tasks/${t.id}`)} title={t.id}>
                      {shortId(t.id)}
                    </a>
                  </td>
                  <td>{t.type}</td>
                  <td>
                    <Status status={t.status} />
                  </td>
                  <td>{t.priority}</td>
                  <td title={t.run_at}>
                    {instant(t.run_at)} <span class="muted">{relative(t.run_at)}</span>
                  </td>
                  <td class="num">
                    {t.attempt}/{t.max_attempts}
                  </td>
                  <td class="clip">{t.last_error?.message ?? ""}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {data.tasks.length === 0 && <p class="muted">No task matches.</p>}
          <Pager cursors={cursors} next={data.next_cursor} />
        </>
      )}
    </section>
  );
}

/** A filter of a few fixed values, or "any" (the empty value: no filter). */
function Choice(props: {
  label: string;
  name: string;
  value: string;
  options: readonly string[];
  onChange: (name: string, value: string) => void;
}) {
  return (
    <label>
      {props.label}
      <select
        name={props.name}
        value={props.value}
        onChange={(e) => props.onChange(props.name, (e.target as HTMLSelectElement).value)}
      >
        <option value="">any</option>
        {props.options.map((option) => (
          <option key={option} value={option}>
            {option}
          </option>
        ))}
      </select>
    </label>
  );
}
