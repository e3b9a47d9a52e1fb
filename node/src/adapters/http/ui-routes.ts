/**
 * The dashboard's static files at /ui (docs/dashboard.md): the build of ui/
 * (`npm run build`, into dist/ui), read into memory once when the API starts,
 * so a request never touches the file system and no path from a URL is ever
 * opened. Nothing is fetched from anywhere else at run time: the page's
 * Content-Security-Policy allows only this origin.
 *
 *  - a file of the build is served with its content type; hashed assets
 *    (assets/*) may be cached for a year, index.html never;
 *  - any other path under /ui is the single-page app's: index.html, whose
 *    router reads the path (a reload of /ui/tasks/<id> works);
 *  - a missing asset is 404, not index.html (a script answered with HTML
 *    fails with a confusing error);
 *  - a build that is missing answers 503 saying how to build it.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import type { HttpReply, Route } from "./exchange.js";

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".txt": "text/plain; charset=utf-8",
  ".woff2": "font/woff2",
  ".map": "application/json",
};

const OTHER_FILES = "application/octet-stream";
/** Every type a file of the build is served with (the OpenAPI document lists them). */
export const UI_CONTENT_TYPES: readonly string[] = [
  ...new Set([...Object.values(CONTENT_TYPES), OTHER_FILES]),
];

const SECURITY_HEADERS: Array<[string, string]> = [
  ["X-Content-Type-Options", "nosniff"],
  ["Referrer-Policy", "no-referrer"],
  ["X-Frame-Options", "DENY"],
  [
    "Content-Security-Policy",
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; " +
      "connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'",
  ],
];

/** Total bytes the build may hold in memory: it is a few hundred KiB; more is a wrong directory. */
const MAX_TOTAL_BYTES = 32 * 1024 * 1024;

interface StaticFile {
  body: Buffer;
  contentType: string;
  immutable: boolean;
}

export function uiRoutes(directory: string): Route[] {
  const files = loadBuild(directory);
  const serve = (urlPath: string): HttpReply => {
    if (files === null) {
      throw new ChronofenceError(
        ErrorCode.Unavailable,
        `the dashboard is not built (no ${path.join(directory, "index.html")}): run npm run build`,
      );
    }
    const relative = urlPath.replace(/^\/ui\/?/, "");
    const file = files.get(relative);
    if (file) return reply(file);
    if (relative.startsWith("assets/") || path.extname(relative) !== "") {
      throw new ChronofenceError(ErrorCode.RouteNotFound, "no such file in the dashboard");
    }
    return reply(files.get("index.html")!);
  };
  return [
    {
      // The dashboard's single-page app.
      method: "get",
      pattern: "/ui",
      name: "GET /ui",
      handle: async (request) => serve(request.path),
    },
    {
      // The dashboard's files, and its client-side routes (answered with index.html).
      method: "get",
      pattern: "/ui/*",
      name: "GET /ui/*",
      handle: async (request) => serve(request.path),
    },
  ];
}

function reply(file: StaticFile): HttpReply {
  return {
    status: 200,
    body: file.body,
    contentType: file.contentType,
    headers: [
      ["Cache-Control", file.immutable ? "public, max-age=31536000, immutable" : "no-cache"],
      ...SECURITY_HEADERS,
    ],
  };
}

/** Every file under `directory` by its relative path with `/`, or null when there is no build. */
function loadBuild(directory: string): Map<string, StaticFile> | null {
  const index = path.join(directory, "index.html");
  if (!safeIsFile(index)) return null;
  const files = new Map<string, StaticFile>();
  let total = 0;
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) {
        const body = readFileSync(full);
        total += body.byteLength;
        if (total > MAX_TOTAL_BYTES)
          throw new Error(`${directory} is not a dashboard build: too large`);
        const relative = path.relative(directory, full).split(path.sep).join("/");
        files.set(relative, {
          body,
          contentType: CONTENT_TYPES[path.extname(full)] ?? OTHER_FILES,
          immutable: relative.startsWith("assets/"),
        });
      }
    }
  };
  walk(directory);
  return files;
}

function safeIsFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
