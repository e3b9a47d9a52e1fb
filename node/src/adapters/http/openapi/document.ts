/**
 * The OpenAPI 3.1 document of the routes a server serves, generated from
 * the operation tables and from the zod schemas that validate requests and
 * describe answers (`z.toJSONSchema`: request bodies as their input, answers
 * as their output). Each schema with a `meta({ id })` becomes one entry of
 * components.schemas, referenced wherever it appears.
 *
 * coverage() compares a route table with the operation tables: a route
 * without a description, a description without a route, or a route whose
 * name does not spell its pattern is a gap (the completeness test walks the
 * table the API serves and wants no gap).
 */
import { z } from "zod";
import type { Route } from "../exchange.js";
import { DASHBOARD_OPERATIONS, DASHBOARD_UI_OPERATIONS } from "./dashboard-operations.js";
import { type Answer, ERROR_MEANINGS, type Operation } from "./operation.js";
import {
  OPERATIONS_OPERATIONS,
  REFERENCE_OPERATIONS,
  SCHEDULE_OPERATIONS,
  WORKFLOW_OPERATIONS,
} from "./other-operations.js";
import { ErrorBody } from "./resources.js";
import { TASK_OPERATIONS } from "./task-operations.js";

/** Every described operation, by route name (`GET /v1/tasks/{id}`). */
export const OPERATIONS: Readonly<Record<string, Operation>> = {
  ...TASK_OPERATIONS,
  ...WORKFLOW_OPERATIONS,
  ...SCHEDULE_OPERATIONS,
  ...DASHBOARD_OPERATIONS,
  ...DASHBOARD_UI_OPERATIONS,
  ...OPERATIONS_OPERATIONS,
  ...REFERENCE_OPERATIONS,
};

export interface Coverage {
  /** Served routes that have no description. */
  undescribed: string[];
  /** Descriptions of routes that are not served. */
  unrouted: string[];
  /** Routes whose name is not `<METHOD> <pattern with {param}>`. */
  misnamed: string[];
}

export function coverage(
  routes: readonly Pick<Route, "method" | "pattern" | "name">[],
  operations: Readonly<Record<string, Operation>> = OPERATIONS,
): Coverage {
  const served = new Set(routes.map((r) => r.name));
  return {
    undescribed: [...served].filter((name) => !(name in operations)),
    unrouted: Object.keys(operations).filter((name) => !served.has(name)),
    misnamed: routes.filter((r) => r.name !== nameOf(r)).map((r) => r.name),
  };
}

const VERB = { get: "GET", post: "POST", patch: "PATCH", del: "DELETE" } as const;
const nameOf = (route: Pick<Route, "method" | "pattern">) =>
  `${VERB[route.method]} ${route.pattern.replace(/:([A-Za-z_]+)/g, "{$1}")}`;

export interface DocumentInfo {
  title: string;
  version: string;
}

/** The document of the routes given that have a description (coverage() reports the rest). */
export function openApiDocument(
  routes: readonly Pick<Route, "name">[],
  info: DocumentInfo,
  operations: Readonly<Record<string, Operation>> = OPERATIONS,
): Record<string, unknown> {
  const components = new Components();
  const paths: Record<string, Record<string, unknown>> = {};
  for (const { name } of routes) {
    const operation = operations[name];
    if (!operation) continue;
    const [verb, path] = name.split(" ") as [string, string];
    paths[path] ??= {};
    paths[path][verb.toLowerCase()] = describe(operation, components);
  }
  return {
    openapi: "3.1.0",
    info: {
      ...info,
      description:
        "Chronofence's HTTP API. Every /v1 call needs `Authorization: Bearer <api key>` and is " +
        "scoped to the key's tenant, except GET /v1/cluster, which takes the operator's token " +
        "(CF_ADMIN_TOKEN). docs/api.md in the repository has the long form, docs/dashboard.md " +
        "that of the dashboard's routes.",
    },
    tags: [
      { name: "tasks", description: "Submit, read, list, cancel and replay tasks." },
      { name: "executions", description: "The fenced worker protocol, for workers outside Node." },
      { name: "workflows", description: "DAGs of tasks with trigger rules." },
      { name: "schedules", description: "Cron schedules." },
      {
        name: "dashboard",
        description:
          "What the web dashboard (/ui) reads beyond the routes above, the watchdog's alert " +
          "reports, and the operator's cluster view.",
      },
      { name: "operations", description: "Health, readiness, metrics." },
      { name: "reference", description: "This document and its reference page." },
    ],
    paths,
    components: {
      schemas: components.schemas,
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", description: "A tenant's API key, cfk_..." },
        operatorToken: {
          type: "http",
          scheme: "bearer",
          description: "The operator's token, CF_ADMIN_TOKEN of the API role (not an API key).",
        },
      },
    },
  };
}

function describe(operation: Operation, components: Components): Record<string, unknown> {
  const parameters = [
    ...Object.entries(operation.pathParameters ?? {}).map(([name, description]) => ({
      name,
      in: "path",
      required: true,
      description,
      schema: { type: "string" },
    })),
    ...(operation.query ?? []).map((q) => ({
      name: q.name,
      in: "query",
      required: false,
      description: q.description,
      schema: components.ref(q.schema, "input"),
    })),
  ];
  const responses: Record<string, unknown> = {};
  for (const [status, answer] of Object.entries(operation.ok)) {
    responses[status] = response(answer, components);
  }
  for (const status of operation.errors) {
    responses[String(status)] = response(
      {
        description: operation.errorMeanings?.[status] ?? ERROR_MEANINGS[status] ?? "An error.",
        schema: ErrorBody,
      },
      components,
    );
  }
  return {
    operationId: operation.operationId,
    tags: [operation.tag],
    summary: operation.summary,
    ...(operation.description !== undefined && { description: operation.description }),
    ...(parameters.length > 0 && { parameters }),
    ...(operation.body && {
      requestBody: {
        required: operation.body.required,
        ...(operation.body.description !== undefined && {
          description: operation.body.description,
        }),
        content: {
          "application/json": { schema: components.ref(operation.body.schema, "input") },
        },
      },
    }),
    responses,
    security: operation.authenticated ? [{ [operation.credential ?? "apiKey"]: [] }] : [],
  };
}

function response(answer: Answer, components: Components): Record<string, unknown> {
  const headers = Object.entries(answer.headers ?? {}).map(([name, description]) => [
    name,
    { description, schema: { type: "string" } },
  ]);
  const types = answer.contentType === undefined ? [] : [answer.contentType].flat();
  const content = answer.schema
    ? { "application/json": { schema: components.ref(answer.schema, "output") } }
    : types.length > 0
      ? Object.fromEntries(types.map((type) => [type, { schema: { type: "string" } }]))
      : undefined;
  return {
    description: answer.description,
    ...(headers.length > 0 && { headers: Object.fromEntries(headers) }),
    ...(content && { content }),
  };
}

type Io = "input" | "output";

/** components.schemas, filled as schemas are referenced. */
class Components {
  readonly schemas: Record<string, unknown> = {};
  private readonly texts = new Map<string, string>();

  /** The schema as a `$ref` when it has an id, else inline; its named parts go to components. */
  ref(schema: z.ZodType, io: Io): unknown {
    const {
      $schema: _dialect,
      $defs,
      ...root
    } = z.toJSONSchema(schema, {
      io,
      target: "draft-2020-12",
      unrepresentable: "any",
    }) as Record<string, unknown> & { $defs?: Record<string, unknown> };
    for (const [id, definition] of Object.entries($defs ?? {})) this.add(id, definition);
    return relink(root);
  }

  /** One id, one shape: the same id generated two ways (input and output differ) is a bug here. */
  private add(id: string, definition: unknown): void {
    const text = JSON.stringify(relink(definition));
    const known = this.texts.get(id);
    if (known !== undefined && known !== text) {
      throw new Error(`schema ${id} differs between its uses (input and output?): give it two ids`);
    }
    this.texts.set(id, text);
    this.schemas[id] = JSON.parse(text);
  }
}

/** zod links a document's own definitions (`#/$defs/X`); OpenAPI keeps them in components. */
const relink = (value: unknown): unknown =>
  JSON.parse(JSON.stringify(value).replaceAll('"#/$defs/', '"#/components/schemas/'));
