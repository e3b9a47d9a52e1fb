/**
 * The OpenAPI document's builder on the route tables of routes.ts,
 * schedule-routes.ts and the dashboard's (the completeness of the table the API really serves
 * is integration/openapi.test.ts): gaps are reported both ways, and the
 * document passes an OpenAPI 3.1 validator.
 */
import { compileErrors, validate } from "@readme/openapi-parser";
import { describe, expect, it } from "vitest";
import { clusterRoutes } from "../../../src/adapters/http/cluster-routes.js";
import {
  type DashboardRouteDeps,
  dashboardRoutes,
} from "../../../src/adapters/http/dashboard-routes.js";
import type { Route } from "../../../src/adapters/http/exchange.js";
import {
  coverage,
  OPERATIONS,
  openApiDocument,
} from "../../../src/adapters/http/openapi/document.js";
import { withApiReference } from "../../../src/adapters/http/openapi/reference-routes.js";
import { apiRoutes, type RouteDeps } from "../../../src/adapters/http/routes.js";
import {
  type ScheduleRouteDeps,
  scheduleRoutes,
} from "../../../src/adapters/http/schedule-routes.js";
import { uiRoutes } from "../../../src/adapters/http/ui-routes.js";
import type { ClusterService } from "../../../src/app/dashboard/cluster.js";
import {
  AlertReportRequest,
  DeadLetterListQuery,
  TaskSearchQuery,
  UpcomingQuery,
  WorkflowListQuery,
} from "../../../src/app/dashboard/dashboard-requests.js";

// Building a route table calls none of its dependencies (the dashboard's files: none there).
const table = (): Route[] =>
  withApiReference([
    ...apiRoutes({} as RouteDeps),
    ...scheduleRoutes({} as ScheduleRouteDeps),
    ...dashboardRoutes({} as DashboardRouteDeps),
    ...clusterRoutes({} as ClusterService),
    ...uiRoutes("/nonexistent/chronofence-ui"),
  ]);

describe("the OpenAPI document", () => {
  it("describes every route of the tables, and nothing else", () => {
    expect(coverage(table())).toEqual({ undescribed: [], unrouted: [], misnamed: [] });
  });

  it("reports a route without a description, a description without a route, a misnamed route", () => {
    const routes = table().filter((r) => r.name !== "DELETE /v1/workflows/{id}");
    routes.push(
      {
        method: "get",
        pattern: "/v1/secret",
        name: "GET /v1/secret",
        handle: async () => ({ status: 200, body: "" }),
      },
      {
        method: "get",
        pattern: "/v1/things/:id",
        name: "GET /v1/things/{thing}",
        handle: async () => ({ status: 200, body: "" }),
      },
    );
    const gaps = coverage(routes, {
      ...OPERATIONS,
      "GET /v1/things/{thing}": OPERATIONS["GET /v1/tasks/{id}"]!,
    });
    expect(gaps.undescribed).toEqual(["GET /v1/secret"]);
    expect(gaps.unrouted).toEqual(["DELETE /v1/workflows/{id}"]);
    expect(gaps.misnamed).toEqual(["GET /v1/things/{thing}"]);
  });

  it("passes an OpenAPI 3.1 validator", async () => {
    const document = openApiDocument(table(), { title: "t", version: "1" });
    const result = await validate(structuredClone(document) as never);
    expect(result.valid, result.valid ? "" : compileErrors(result)).toBe(true);
    expect(document.openapi).toBe("3.1.0");
  });

  it("takes request bodies from the validating schemas, answers from the resources", () => {
    // biome-ignore lint/suspicious/noExplicitAny: walking a JSON document
    const document = openApiDocument(table(), { title: "t", version: "1" }) as any;
    const post = document.paths["/v1/tasks"].post;
    expect(post.requestBody.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/TaskSubmission",
    });
    const submission = document.components.schemas.TaskSubmission;
    expect(submission.additionalProperties).toBe(false);
    expect(submission.required).toEqual(["type"]);
    expect(submission.properties.type).toMatchObject({ minLength: 1, maxLength: 128 });
    expect(submission.properties.priority.enum).toEqual(["critical", "standard", "bulk"]);
    expect(submission.properties.run_at.format).toBe("date-time");
    expect(document.components.schemas.Task.required).toContain("updated_at");
    const get = document.paths["/v1/tasks/{id}"].get;
    expect(get.parameters[0]).toMatchObject({ name: "id", in: "path", required: true });
    expect(get.responses["404"].content["application/json"].schema.$ref).toBe(
      "#/components/schemas/Error",
    );
    expect(document.paths["/healthz"].get.security).toEqual([]);
    expect(get.security).toEqual([{ apiKey: [] }]);
  });

  it("describes the dashboard's queries and the alert body with the schemas that validate them", () => {
    for (const [name, schema] of [
      ["GET /v1/tasks/search", TaskSearchQuery],
      ["GET /v1/dead-letters", DeadLetterListQuery],
      ["GET /v1/workflows", WorkflowListQuery],
      ["GET /v1/schedules/{id}/upcoming", UpcomingQuery],
    ] as const) {
      const described = OPERATIONS[name]!.query!;
      expect(described.map((q) => q.name)).toEqual(Object.keys(schema.shape));
      described.forEach((q, i) => {
        expect(q.schema, `${name} ${q.name}`).toBe(Object.values(schema.shape)[i]);
      });
    }
    expect(OPERATIONS["POST /v1/watchdog/alerts"]!.body!.schema).toBe(AlertReportRequest);

    // biome-ignore lint/suspicious/noExplicitAny: walking a JSON document
    const document = openApiDocument(table(), { title: "t", version: "1" }) as any;
    const search = document.paths["/v1/tasks/search"].get;
    expect(search.tags).toEqual(["dashboard"]);
    const status = search.parameters.find((p: { name: string }) => p.name === "status");
    expect(status.schema.anyOf).toContainEqual({ type: "string", const: "" });
    expect(status.schema.anyOf[1].enum).toContain("DEAD");
    const alert = document.components.schemas.AlertReport;
    expect(alert.additionalProperties).toBe(false);
    expect(alert.properties.key).toMatchObject({ minLength: 1, maxLength: 200 });
    expect(alert.required).toEqual(["key", "kind", "state", "message"]);
    expect(document.paths["/v1/cluster"].get.security).toEqual([{ operatorToken: [] }]);
    expect(document.components.securitySchemes.operatorToken).toMatchObject({ scheme: "bearer" });
    expect(document.paths["/v1/stats"].get.security).toEqual([{ apiKey: [] }]);
    expect(document.paths["/ui"].get.security).toEqual([]);
    expect(Object.keys(document.paths["/ui/*"].get.responses["200"].content)).toContain(
      "text/javascript; charset=utf-8",
    );
    expect(document.tags.map((t: { name: string }) => t.name)).toContain("dashboard");
  });
});
