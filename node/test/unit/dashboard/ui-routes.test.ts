/** The dashboard's static files (ui-routes.ts): content types, caching, the SPA fallback, 404 and 503. */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BodylessRoute, HttpReply } from "../../../src/adapters/http/exchange.js";
import { uiRoutes } from "../../../src/adapters/http/ui-routes.js";
import { ChronofenceError } from "../../../src/domain/errors.js";

let dir: string;
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 255]);

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "cf-ui-"));
  await mkdir(path.join(dir, "assets"));
  await writeFile(path.join(dir, "index.html"), "<!doctype html><title>x</title>");
  await writeFile(path.join(dir, "assets", "index-abc.js"), "console.log(1)");
  await writeFile(path.join(dir, "assets", "index-abc.css"), "body{}");
  await writeFile(path.join(dir, "logo.png"), PNG);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function get(routes: ReturnType<typeof uiRoutes>, urlPath: string): Promise<HttpReply> {
  const route = (urlPath === "/ui" ? routes[0] : routes[1]) as BodylessRoute;
  return route.handle({
    method: "get",
    path: urlPath,
    query: "",
    params: [],
    authorization: "",
    clientAddress: "127.0.0.1",
  });
}
const header = (reply: HttpReply, name: string) =>
  reply.headers?.find(([n]) => n.toLowerCase() === name.toLowerCase())?.[1];

describe("dashboard static files", () => {
  it("serves each file with its content type; hashed assets cache for a year, index.html never", async () => {
    const routes = uiRoutes(dir);
    const js = await get(routes, "/ui/assets/index-abc.js");
    expect(js.contentType).toBe("text/javascript; charset=utf-8");
    expect(Buffer.from(js.body).toString()).toBe("console.log(1)");
    expect(header(js, "cache-control")).toContain("immutable");
    expect((await get(routes, "/ui/assets/index-abc.css")).contentType).toContain("text/css");
    const png = await get(routes, "/ui/logo.png");
    expect(png.contentType).toBe("image/png");
    expect(Buffer.compare(Buffer.from(png.body), PNG)).toBe(0);
    const index = await get(routes, "/ui");
    expect(index.contentType).toBe("text/html; charset=utf-8");
    expect(header(index, "cache-control")).toBe("no-cache");
    expect(header(index, "content-security-policy")).toContain("default-src 'self'");
    expect(header(index, "x-content-type-options")).toBe("nosniff");
  });

  it("answers the app's own paths with index.html, and a missing file with 404", async () => {
    const routes = uiRoutes(dir);
    for (const p of ["/ui/", "/ui/tasks", "/ui/tasks/01a0-x", "/ui/workflows/abc"]) {
      expect(Buffer.from((await get(routes, p)).body).toString(), p).toContain("<!doctype html>");
    }
    for (const p of ["/ui/assets/gone.js", "/ui/missing.png", "/ui/../package.json"]) {
      await expect(get(routes, p), p).rejects.toMatchObject({ code: "route_not_found" });
    }
  });

  it("says how to build the dashboard when there is no build", async () => {
    const routes = uiRoutes(path.join(dir, "nothing-here"));
    const error = await get(routes, "/ui").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChronofenceError);
    expect(error).toMatchObject({ code: "unavailable" });
    expect((error as Error).message).toContain("npm run build");
  });
});
