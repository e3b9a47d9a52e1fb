/**
 * The descriptions of the dashboard's routes (dashboard-routes.ts,
 * cluster-routes.ts, ui-routes.ts), keyed by route name, as in
 * task-operations.ts. Query parameters and the alert body are the schemas
 * that validate them (app/dashboard/dashboard-requests.ts); answers are
 * dashboard-resources.ts. docs/dashboard.md ("API") is the long form.
 */
import {
  AlertReportRequest,
  DeadLetterListQuery,
  MAX_LIMIT,
  MAX_UPCOMING,
  TaskSearchQuery,
  UpcomingQuery,
  WorkflowListQuery,
} from "../../../app/dashboard/dashboard-requests.js";
import { UI_CONTENT_TYPES } from "../ui-routes.js";
import {
  AlertReported,
  ClusterResource,
  DeadLetterPage,
  ScheduleUpcoming,
  StatsResource,
  TaskHistoryResource,
  WorkflowPage,
} from "./dashboard-resources.js";
import { type Operation, queryOf } from "./operation.js";
import { TaskPage } from "./resources.js";

const QUERY_RULE =
  " An empty parameter (`status=`) is absent, except a number; a bad value answers 400 " +
  "invalid_request naming it in details.field.";
const cursor = "The `next_cursor` of the previous page.";
const limit = `Per page, 1–${MAX_LIMIT} (default 50).`;

export const DASHBOARD_OPERATIONS: Readonly<Record<string, Operation>> = {
  "GET /v1/stats": {
    operationId: "getStats",
    tag: "dashboard",
    summary: "The tenant's counts, rates, lateness and alerts (the Overview)",
    description:
      "Counts by state and priority over the tenant's newest 100,000 tasks (`capped` past " +
      "that), overdue tasks and open dead letters; completed/s and failed/s over the last " +
      "minute and publish and start lateness over the last five minutes, from what the roles " +
      "recorded, with a series in 10-second buckets; the watchdog's alerts. Cached for a " +
      "second per tenant.",
    authenticated: true,
    ok: { 200: { description: "The tenant's numbers now.", schema: StatsResource } },
    errors: [401, 503],
  },
  "GET /v1/tasks/search": {
    operationId: "searchTasks",
    tag: "dashboard",
    summary: "Search tasks by state, type, priority, run_at range, id or idempotency key",
    description: `Newest first, keyset-paginated.${QUERY_RULE}`,
    authenticated: true,
    query: queryOf(TaskSearchQuery, {
      status: "Only tasks in this state.",
      type: "Only tasks of this type.",
      priority: "Only tasks of this priority.",
      run_at_from:
        "Only tasks due at or after this instant (RFC 3339 with an offset; URL-encode a `+`).",
      run_at_to: "Only tasks due before this instant (exclusive).",
      id: "Only this task (a UUID, any case).",
      idempotency_key: "Only the task submitted with this key.",
      cursor,
      limit,
    }),
    ok: { 200: { description: "One page.", schema: TaskPage } },
    errors: [400, 401, 503],
  },
  "GET /v1/tasks/{id}/history": {
    operationId: "getTaskHistory",
    tag: "dashboard",
    summary: "A task's timeline and every attempt",
    description:
      "Timeline: created, armed, published, started, finished, each with its instant and its " +
      "lateness against run_at (stages of an attempt before the latest failure are left out: " +
      "they are in that attempt's entry). Attempts: each with its fencing token, worker, " +
      "instants, and its error or result.",
    authenticated: true,
    pathParameters: { id: "The task's id (a UUID)." },
    ok: { 200: { description: "The history.", schema: TaskHistoryResource } },
    errors: [401, 404, 503],
  },
  "GET /v1/dead-letters": {
    operationId: "listDeadLetters",
    tag: "dashboard",
    summary: "Dead letters with their failure, newest death first",
    description: `Keyset-paginated; each is replayed by POST /v1/tasks/{task_id}/replay.${QUERY_RULE}`,
    authenticated: true,
    query: queryOf(DeadLetterListQuery, {
      open: "`true` (default): only those not replayed; `false`: replayed ones too.",
      cursor,
      limit,
    }),
    ok: { 200: { description: "One page.", schema: DeadLetterPage } },
    errors: [400, 401, 503],
  },
  "GET /v1/workflows": {
    operationId: "listWorkflows",
    tag: "workflows",
    summary: "List workflows, newest first, without their nodes",
    description: `Keyset-paginated; GET /v1/workflows/{id} has the nodes.${QUERY_RULE}`,
    authenticated: true,
    query: queryOf(WorkflowListQuery, { cursor, limit }),
    ok: { 200: { description: "One page.", schema: WorkflowPage } },
    errors: [400, 401, 503],
  },
  "GET /v1/schedules/{id}/upcoming": {
    operationId: "getScheduleUpcoming",
    tag: "dashboard",
    summary: "A schedule's next fire instants in its zone, and its dead man's switch",
    description:
      "The instants the expression fires after now, by the planner's cron rules (also while " +
      "paused: what resuming would run), each also as local time with its offset; the " +
      `switch judged as the watchdog judges it.${QUERY_RULE}`,
    authenticated: true,
    pathParameters: { id: "The schedule's id." },
    query: queryOf(UpcomingQuery, {
      count: `How many instants, 1–${MAX_UPCOMING} (default 5).`,
    }),
    ok: { 200: { description: "The next instants.", schema: ScheduleUpcoming } },
    errors: [400, 401, 404, 503],
  },
  "POST /v1/watchdog/alerts": {
    operationId: "reportAlert",
    tag: "dashboard",
    summary: "Report a watchdog alert firing or resolved, for the key's tenant",
    description:
      "The watchdog's own report (chronofence watchdog); the tenant sees it in GET /v1/stats, " +
      "the operator in GET /v1/cluster. It replaces the alert's row (tenant, key); sending it " +
      "again is harmless, and a firing alert reported firing again keeps its fired_at.",
    authenticated: true,
    body: { schema: AlertReportRequest, required: true },
    ok: { 200: { description: "Stored.", schema: AlertReported } },
    errors: [400, 401, 413, 503],
  },
  "GET /v1/cluster": {
    operationId: "getCluster",
    tag: "dashboard",
    summary: "Nodes, shard leases, timers, Kafka lag, the reconciler and every tenant's alerts",
    description:
      "For the operator: `Authorization: Bearer <CF_ADMIN_TOKEN>`, not a tenant's API key. " +
      "Nodes as they report themselves; shard owners and epochs from the leases directly; " +
      "Kafka lag asked of the broker (an error in its place when the broker does not answer " +
      "within 3 s).",
    authenticated: true,
    credential: "operatorToken",
    ok: { 200: { description: "The cluster now.", schema: ClusterResource } },
    errors: [401, 503],
    errorMeanings: {
      401: "No operator token, a wrong one (a tenant's API key too), or CF_ADMIN_TOKEN unset on the API (unauthorized).",
    },
  },
};

const uiErrors = {
  404: "No such file in the dashboard's build (route_not_found).",
  503: "The dashboard is not built: run npm run build (unavailable).",
};
const uiHeaders = {
  "Cache-Control": "no-cache for index.html; public, max-age=31536000, immutable for assets/*",
  "Content-Security-Policy": "this origin only",
};

export const DASHBOARD_UI_OPERATIONS: Readonly<Record<string, Operation>> = {
  "GET /ui": {
    operationId: "dashboardPage",
    tag: "dashboard",
    summary: "The web dashboard (served by this process, no API key: its files hold no data)",
    authenticated: false,
    ok: { 200: { description: "index.html.", contentType: "text/html", headers: uiHeaders } },
    errors: [503],
    errorMeanings: uiErrors,
  },
  "GET /ui/*": {
    operationId: "dashboardFile",
    tag: "dashboard",
    summary: "A file of the dashboard's build, or one of its pages",
    description:
      "Any path under /ui/: a file of the build (scripts, styles, images), or else a page of " +
      "the single-page app, answered with index.html (a reload of /ui/tasks/{id} works). A " +
      "missing asset (under assets/, or any path with an extension) is 404.",
    authenticated: false,
    ok: {
      200: {
        description: "The file, with its type.",
        contentType: UI_CONTENT_TYPES,
        headers: uiHeaders,
      },
    },
    errors: [404, 503],
    errorMeanings: uiErrors,
  },
};
