/**
 * The routes the dashboard needs that the task, schedule and workflow routes
 * lack (docs/dashboard.md, "API"). Authenticated and tenant-scoped like
 * every /v1 route: the key's tenant is the only one they read. Their
 * queries and the alert body are validated by the schemas of
 * app/dashboard/dashboard-requests.ts; openapi/dashboard-operations.ts
 * describes them with the same schemas.
 */
import type { DashboardQueries } from "../../app/dashboard/dashboard-queries.js";
import type { ScheduleInsightService } from "../../app/dashboard/schedule-insight.js";
import type { TaskHistoryService } from "../../app/dashboard/task-history.js";
import type { TenantStatsService } from "../../app/dashboard/tenant-stats.js";
import type { Authenticator } from "../../app/shared/authenticator.js";
import type { Principal } from "../../domain/tenant.js";
import { type HttpRequestData, json, type Route } from "./exchange.js";
import { parseJson } from "./json-body.js";
import { presentTask } from "./present.js";
import {
  presentDeadLetter,
  presentHistory,
  presentInsight,
  presentStats,
  presentWorkflowSummary,
} from "./present-dashboard.js";
import { authorized } from "./route-scopes.js";

export interface DashboardRouteDeps {
  authenticator: Authenticator;
  stats: TenantStatsService;
  history: TaskHistoryService;
  queries: DashboardQueries;
  insight: ScheduleInsightService;
}

/** An alert report is small: message ≤ 4 KiB, details ≤ 16 KiB. */
const ALERT_BODY_BYTES = 32 * 1024;

export function dashboardRoutes(deps: DashboardRouteDeps): Route[] {
  const principalOf = (request: HttpRequestData): Principal | Promise<Principal> =>
    authorized(deps.authenticator, request);
  const idOf = (request: HttpRequestData) => request.params[0] ?? "";

  return [
    {
      // The Overview: counts by state and priority, overdue, dead letters, rates, lateness, alerts.
      method: "get",
      pattern: "/v1/stats",
      name: "GET /v1/stats",
      async handle(request) {
        return json(200, presentStats(await deps.stats.get(await principalOf(request))));
      },
    },
    {
      // Tasks filtered by status, type, priority, run_at range, id or idempotency key; newest first.
      method: "get",
      pattern: "/v1/tasks/search",
      name: "GET /v1/tasks/search",
      async handle(request) {
        const page = await deps.queries.searchTasks(await principalOf(request), request.query);
        return json(200, { tasks: page.items.map(presentTask), next_cursor: page.nextCursor });
      },
    },
    {
      // A task's timeline (created → armed → published → started → finished) and every attempt.
      method: "get",
      pattern: "/v1/tasks/:id/history",
      name: "GET /v1/tasks/{id}/history",
      async handle(request) {
        const history = await deps.history.get(await principalOf(request), idOf(request));
        return json(200, presentHistory(history));
      },
    },
    {
      // Dead letters with their failure context, newest first (open only unless open=false).
      method: "get",
      pattern: "/v1/dead-letters",
      name: "GET /v1/dead-letters",
      async handle(request) {
        const page = await deps.queries.deadLetters(await principalOf(request), request.query);
        return json(200, {
          dead_letters: page.items.map(presentDeadLetter),
          next_cursor: page.nextCursor,
        });
      },
    },
    {
      // The tenant's workflows, newest first (GET /v1/workflows/{id} has the nodes).
      method: "get",
      pattern: "/v1/workflows",
      name: "GET /v1/workflows",
      async handle(request) {
        const page = await deps.queries.workflows(await principalOf(request), request.query);
        return json(200, {
          workflows: page.items.map(presentWorkflowSummary),
          next_cursor: page.nextCursor,
        });
      },
    },
    {
      // A schedule's next fire instants in its zone and its dead man's switch state.
      method: "get",
      pattern: "/v1/schedules/:id/upcoming",
      name: "GET /v1/schedules/{id}/upcoming",
      async handle(request) {
        const principal = await principalOf(request);
        const insight = await deps.insight.get(principal, idOf(request), request.query);
        return json(200, presentInsight(insight));
      },
    },
    {
      // The watchdog reports an alert firing or resolved, for its tenant.
      method: "post",
      pattern: "/v1/watchdog/alerts",
      name: "POST /v1/watchdog/alerts",
      maxBodyBytes: ALERT_BODY_BYTES,
      admit: (request) => {
        const admit = (principal: Principal) => ({
          maxBodyBytes: ALERT_BODY_BYTES,
          handle: async (body: Buffer) => {
            const alert = await deps.queries.reportAlert(principal, parseJson(body));
            return json(200, { key: alert.key, state: alert.state });
          },
        });
        const principal = principalOf(request);
        return principal instanceof Promise ? principal.then(admit) : admit(principal);
      },
    },
  ];
}
