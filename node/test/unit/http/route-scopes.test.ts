/** Every route the API serves requires a scope (or is public), and the router's choice is the table's. */
import { describe, expect, it } from "vitest";
import { clusterRoutes } from "../../../src/adapters/http/cluster-routes.js";
import {
  type DashboardRouteDeps,
  dashboardRoutes,
} from "../../../src/adapters/http/dashboard-routes.js";
import { withApiReference } from "../../../src/adapters/http/openapi/reference-routes.js";
import { ROUTE_SCOPES, routeNameOf } from "../../../src/adapters/http/route-scopes.js";
import { apiRoutes, type RouteDeps } from "../../../src/adapters/http/routes.js";
import {
  type ScheduleRouteDeps,
  scheduleRoutes,
} from "../../../src/adapters/http/schedule-routes.js";
import { uiRoutes } from "../../../src/adapters/http/ui-routes.js";
import type { ClusterService } from "../../../src/app/dashboard/cluster.js";

// Routes are built without being called: their dependencies are never touched here. The same
// groups as the API role serves (main/api.ts, main/dashboard.ts), reference routes included.
const served = withApiReference([
  ...apiRoutes({ maxSingleBodyBytes: 1, maxBatchBodyBytes: 1 } as unknown as RouteDeps),
  ...scheduleRoutes({ maxBodyBytes: 1 } as unknown as ScheduleRouteDeps),
  ...dashboardRoutes({} as unknown as DashboardRouteDeps),
  ...clusterRoutes({} as unknown as ClusterService),
  ...uiRoutes("/nonexistent"),
]);
/** Routes reached without an API key, whose path the scope lookup never resolves. */
const UNRESOLVED = new Set(["GET /ui/*", "GET /docs/{asset}"]);

/** A path the route's uWS pattern matches: each `:param` filled in. */
const samplePath = (pattern: string) =>
  pattern.replace(/:[a-z]+/g, "0190a000-0000-7000-8000-0000000000aa");
const methodOf = (method: string) => (method === "del" ? "delete" : method);

describe("route scopes", () => {
  it("names a scope for every served route, and no route that is not served", () => {
    const names = served.map((r) => r.name).sort();
    expect(names.filter((n) => ROUTE_SCOPES[n] === undefined)).toEqual([]);
    expect(Object.keys(ROUTE_SCOPES).sort()).toEqual(names);
  });

  it("finds each route by its request's method and path, as the router does", () => {
    for (const route of served) {
      if (UNRESOLVED.has(route.name)) continue;
      expect(routeNameOf(methodOf(route.method), samplePath(route.pattern))).toBe(route.name);
    }
    expect(routeNameOf("post", "/v1/tasks/batch")).toBe("POST /v1/tasks/batch");
    expect(routeNameOf("get", "/v1/tasks/batch")).toBe("GET /v1/tasks/{id}");
    expect(routeNameOf("put", "/v1/tasks")).toBeNull();
    expect(routeNameOf("get", "/v1/nothing")).toBeNull();
  });

  it("gives the worker protocol to execute, and execute to nothing else", () => {
    for (const [name, scope] of Object.entries(ROUTE_SCOPES)) {
      expect(name.includes("/v1/executions/") === (scope === "execute")).toBe(true);
    }
  });
});
