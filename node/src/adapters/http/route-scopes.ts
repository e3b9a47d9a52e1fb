/**
 * The scope each route requires (domain/api-keys.ts), by route name, in one
 * table beside the routes rather than in them; and where it is enforced:
 * `authorized` is how every authenticated route resolves its caller (the
 * `principalOf` of routes.ts and schedule-routes.ts). A route this table does
 * not name is refused to every key (403): a new route cannot be open by
 * omission, and a test checks that every served route is here.
 *
 * The request names its route by method and path; `routeNameOf` finds the
 * name the way the router chose it (literal segments before parameters).
 */
import type { Authenticator } from "../../app/shared/authenticator.js";
import type { Scope } from "../../domain/api-keys.js";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import type { Principal } from "../../domain/tenant.js";
import type { HttpRequestData } from "./exchange.js";

/** `public`: no key needed (health and metrics of the API process). */
export type RouteScope = Scope | "public";

export const ROUTE_SCOPES: Readonly<Record<string, RouteScope>> = {
  "POST /v1/tasks": "submit",
  "POST /v1/tasks/batch": "submit",
  "GET /v1/tasks": "read",
  "GET /v1/tasks/{id}": "read",
  "DELETE /v1/tasks/{id}": "submit",
  "POST /v1/tasks/{id}/replay": "submit",
  "POST /v1/executions/{id}/start": "execute",
  "POST /v1/executions/{id}/heartbeat": "execute",
  "POST /v1/executions/{id}/complete": "execute",
  "POST /v1/executions/{id}/fail": "execute",
  "POST /v1/executions/{id}/interrupt": "execute",
  "POST /v1/workflows": "submit",
  "GET /v1/workflows/{id}": "read",
  "DELETE /v1/workflows/{id}": "submit",
  "POST /v1/schedules": "submit",
  "GET /v1/schedules": "read",
  "GET /v1/schedules/{id}": "read",
  "PATCH /v1/schedules/{id}": "submit",
  "DELETE /v1/schedules/{id}": "submit",
  // The dashboard's reads (dashboard-routes.ts) and the watchdog's alert reports.
  "GET /v1/stats": "read",
  "GET /v1/tasks/search": "read",
  "GET /v1/tasks/{id}/history": "read",
  "GET /v1/dead-letters": "read",
  "GET /v1/workflows": "read",
  "GET /v1/schedules/{id}/upcoming": "read",
  "POST /v1/watchdog/alerts": "submit",
  // No API key: the operator token (cluster-routes.ts) or nothing about a tenant.
  "GET /v1/cluster": "public",
  "GET /ui": "public",
  "GET /ui/*": "public",
  "GET /openapi.json": "public",
  "GET /docs": "public",
  "GET /docs/{asset}": "public",
  "GET /healthz": "public",
  "GET /readyz": "public",
  "GET /metrics": "public",
};

interface Pattern {
  name: string;
  method: string;
  segments: string[];
  literals: number;
}

const PATTERNS: Pattern[] = Object.keys(ROUTE_SCOPES).map((name) => {
  const [method, path] = name.split(" ") as [string, string];
  const segments = path.split("/");
  return { name, method, segments, literals: segments.filter((s) => !isParam(s)).length };
});

function isParam(segment: string): boolean {
  return segment.startsWith("{") && segment.endsWith("}");
}

/** The route name (`GET /v1/tasks/{id}`) of a request's method and path, or null. */
export function routeNameOf(method: string, path: string): string | null {
  const verb = method.toUpperCase();
  const parts = path.split("/");
  let best: Pattern | null = null;
  for (const p of PATTERNS) {
    if (p.method !== verb || p.segments.length !== parts.length) continue;
    if (!p.segments.every((s, i) => isParam(s) || s === parts[i])) continue;
    if (!best || p.literals > best.literals) best = p;
  }
  return best?.name ?? null;
}

/** The request's caller, authenticated, if its key has the scope the route requires; else 403. */
export function authorized(
  authenticator: Authenticator,
  request: HttpRequestData,
): Principal | Promise<Principal> {
  const name = routeNameOf(request.method, request.path);
  const scope = name === null ? undefined : ROUTE_SCOPES[name];
  const check = (principal: Principal): Principal => {
    if (scope === "public" || (scope !== undefined && principal.scopes.includes(scope))) {
      return principal;
    }
    throw new ChronofenceError(
      ErrorCode.Forbidden,
      scope === undefined
        ? "this route is open to no API key"
        : `this API key lacks the ${scope} scope`,
      { details: { route: name, required_scope: scope ?? null } },
    );
  };
  const cached = authenticator.cached(request.authorization);
  if (cached) return check(cached);
  return authenticator.authenticate(request.authorization, request.clientAddress).then(check);
}
