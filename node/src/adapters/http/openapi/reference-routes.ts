/**
 * The API's own reference, served by the API process without a network:
 *
 *   GET /openapi.json     the OpenAPI 3.1 document of every route served
 *   GET /docs             a Swagger UI page that renders it
 *   GET /docs/{asset}     the page's script and style sheet, read from the
 *                         swagger-ui-dist package (no CDN)
 *
 * No API key: the document says what the API accepts, nothing about any
 * tenant. The document is built once, on first request, from the route
 * table given (which includes these routes), so it describes exactly what
 * this server serves.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { ChronofenceError, ErrorCode } from "../../../domain/errors.js";
import type { HttpReply, Route } from "../exchange.js";
import { type DocumentInfo, openApiDocument } from "./document.js";

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Chronofence API reference</title>
  <link rel="stylesheet" href="docs/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="docs/swagger-ui-bundle.js"></script>
  <script src="docs/init.js"></script>
</body>
</html>
`;

// validatorUrl null: Swagger UI would otherwise send the document to an online validator.
const INIT = `window.ui = SwaggerUIBundle({
  url: "openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
});
`;

/** The files of swagger-ui-dist the page loads, by the name it links them with. */
const PACKAGE_ASSETS: Readonly<Record<string, string>> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "application/javascript; charset=utf-8",
};

const INFO: DocumentInfo = { title: "Chronofence API", version: "v1" };

/** The routes given plus the reference routes, whose document describes them all. */
export function withApiReference(routes: readonly Route[], info: DocumentInfo = INFO): Route[] {
  const served: Route[] = [...routes, ...referenceRoutes(() => served, info)];
  return served;
}

function referenceRoutes(served: () => readonly Route[], info: DocumentInfo): Route[] {
  let document: string | undefined;
  const assets = new Map<string, string>();
  const asset = (name: string): HttpReply => {
    if (name === "init.js") return text(INIT, "application/javascript; charset=utf-8");
    const contentType = PACKAGE_ASSETS[name];
    if (contentType === undefined) {
      throw new ChronofenceError(ErrorCode.RouteNotFound, "no such asset", {
        details: { asset: name.slice(0, 64) },
      });
    }
    let body = assets.get(name);
    if (body === undefined) {
      body = readFileSync(packageFile(name), "utf8");
      assets.set(name, body);
    }
    return text(body, contentType);
  };
  return [
    {
      method: "get",
      pattern: "/openapi.json",
      name: "GET /openapi.json",
      async handle() {
        document ??= JSON.stringify(openApiDocument(served(), info));
        return { status: 200, body: document };
      },
    },
    {
      method: "get",
      pattern: "/docs",
      name: "GET /docs",
      handle: async () => text(PAGE, "text/html; charset=utf-8"),
    },
    {
      method: "get",
      pattern: "/docs/:asset",
      name: "GET /docs/{asset}",
      handle: async (request) => asset(request.params[0] ?? ""),
    },
  ];
}

const text = (body: string, contentType: string): HttpReply => ({
  status: 200,
  body,
  contentType,
  headers: [["Cache-Control", "public, max-age=3600"]],
});

const packageFile = (name: string): string =>
  createRequire(import.meta.url).resolve(`swagger-ui-dist/${name}`);
