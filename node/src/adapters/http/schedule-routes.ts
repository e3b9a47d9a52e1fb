/** The `/v1/schedules` routes (docs/api.md, "Schedules"). */

import type { ScheduleService, ScheduleView } from "../../app/schedules/schedules.js";
import type { Authenticator } from "../../app/shared/authenticator.js";
import type { Schedule } from "../../domain/schedule.js";
import { bodyAllowanceBytes } from "../../domain/submission.js";
import type { Principal } from "../../domain/tenant.js";
import type { OccurrenceRecord } from "../../ports/schedule-store.js";
import {
  type Admission,
  type HttpReply,
  type HttpRequestData,
  json,
  type Route,
} from "./exchange.js";
import { parseJson } from "./json-body.js";
import { authorized } from "./route-scopes.js";

export interface ScheduleRouteDeps {
  authenticator: Authenticator;
  schedules: ScheduleService;
  maxBodyBytes: number;
  nextRequestId: () => string;
}

export function scheduleRoutes(deps: ScheduleRouteDeps): Route[] {
  // Authenticates and checks the route's scope (route-scopes.ts).
  const principalOf = (request: HttpRequestData): Principal | Promise<Principal> =>
    authorized(deps.authenticator, request);
  const admitting =
    (handle: (p: Principal, body: Buffer, request: HttpRequestData) => Promise<HttpReply>) =>
    (request: HttpRequestData): Admission | Promise<Admission> => {
      const admit = (principal: Principal): Admission => ({
        maxBodyBytes: Math.min(
          deps.maxBodyBytes,
          bodyAllowanceBytes(principal.limits.maxPayloadBytes, 1),
        ),
        handle: (body) => handle(principal, body, request),
      });
      const principal = principalOf(request);
      return principal instanceof Promise ? principal.then(admit) : admit(principal);
    };
  const idOf = (request: HttpRequestData) => request.params[0] ?? "";

  return [
    {
      method: "post",
      pattern: "/v1/schedules",
      name: "POST /v1/schedules",
      maxBodyBytes: deps.maxBodyBytes,
      admit: admitting(async (principal, raw) => {
        const created = await deps.schedules.create(
          principal,
          parseJson(raw),
          deps.nextRequestId(),
        );
        return json(201, presentSchedule(created));
      }),
    },
    {
      method: "get",
      pattern: "/v1/schedules",
      name: "GET /v1/schedules",
      async handle(request) {
        const principal = await principalOf(request);
        const query = new URLSearchParams(request.query);
        const page = await deps.schedules.list(principal, query.get("cursor"), query.get("limit"));
        return json(200, {
          schedules: page.schedules.map(presentSchedule),
          next_cursor: page.nextCursor,
        });
      },
    },
    {
      method: "get",
      pattern: "/v1/schedules/:id",
      name: "GET /v1/schedules/{id}",
      async handle(request) {
        const principal = await principalOf(request);
        const history = new URLSearchParams(request.query).get("history");
        return json(200, presentView(await deps.schedules.get(principal, idOf(request), history)));
      },
    },
    {
      method: "patch",
      pattern: "/v1/schedules/:id",
      name: "PATCH /v1/schedules/{id}",
      maxBodyBytes: deps.maxBodyBytes,
      admit: admitting(async (principal, raw, request) => {
        const body = parseJson(raw);
        const updated = await deps.schedules.update(
          principal,
          idOf(request),
          body,
          deps.nextRequestId(),
        );
        return json(200, {
          ...presentSchedule(updated.schedule),
          cancelled_task_ids: updated.cancelledTaskIds,
        });
      }),
    },
    {
      method: "del",
      pattern: "/v1/schedules/:id",
      name: "DELETE /v1/schedules/{id}",
      async handle(request) {
        const principal = await principalOf(request);
        const id = idOf(request);
        const deleted = await deps.schedules.delete(principal, id, deps.nextRequestId());
        return json(200, { id, deleted: true, cancelled_task_ids: deleted.cancelledTaskIds });
      },
    },
  ];
}

const iso = (epochMs: number | null): string | null =>
  epochMs === null ? null : new Date(epochMs).toISOString();

export function presentSchedule(s: Schedule): Record<string, unknown> {
  return {
    id: s.id,
    name: s.name,
    expression: s.expression,
    time_zone: s.timeZone,
    type: s.type,
    payload: s.payload,
    priority: s.priority,
    max_attempts: s.maxAttempts,
    timeout_ms: s.timeoutMs,
    backoff: { strategy: s.backoff.strategy, base_ms: s.backoff.baseMs, max_ms: s.backoff.maxMs },
    misfire_policy: s.misfirePolicy,
    overlap_policy: s.overlapPolicy,
    jitter_ms: s.jitterMs,
    expect_within_ms: s.expectWithinMs,
    paused: s.paused,
    next_occurrence_at: s.paused ? null : iso(s.nextOccurrenceMs),
    planned_through: iso(s.plannedThroughMs),
    created_at: iso(s.createdAtMs),
    updated_at: iso(s.updatedAtMs),
  };
}

function presentOccurrence(o: OccurrenceRecord): Record<string, unknown> {
  return {
    scheduled_for: iso(o.scheduledForMs),
    outcome: o.outcome,
    catch_up: o.catchUp,
    task_id: o.taskId,
    run_at: iso(o.runAtMs),
    status: o.status,
    attempt: o.attempt,
  };
}

const presentView = (view: ScheduleView) => ({
  ...presentSchedule(view.schedule),
  history: view.history.map(presentOccurrence),
});
