/**
 * The API's reference as the API process serves it: GET /openapi.json
 * describes exactly the route table the server serves (walked from the
 * running API, not rebuilt here) and passes an OpenAPI 3.1 validator; /docs
 * is an HTML page whose every script and style sheet the same process
 * serves (no CDN).
 */
import { compileErrors, validate } from "@readme/openapi-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { coverage } from "../../src/adapters/http/openapi/document.js";
import { type ApiFixture, startApiFixture } from "./support/api.js";

let fixture: ApiFixture;

beforeAll(async () => {
  fixture = await startApiFixture();
});

afterAll(async () => {
  await fixture?.stop();
});

const get = (path: string) => fetch(`${fixture.api.baseUrl}${path}`);

describe("GET /openapi.json", () => {
  it("describes every route the server serves, and only those", async () => {
    const served = fixture.api.api.routes;
    expect(served.length).toBeGreaterThan(20);
    expect(coverage(served)).toEqual({ undescribed: [], unrouted: [], misnamed: [] });
    const document = await (await get("/openapi.json")).json();
    const operations = Object.entries(document.paths as Record<string, object>).flatMap(
      ([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(operations.sort()).toEqual(served.map((r) => r.name).sort());
  });

  it("is served without an API key and passes an OpenAPI 3.1 validator", async () => {
    const response = await get("/openapi.json");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    const document = await response.json();
    expect(document.openapi).toBe("3.1.0");
    const result = await validate(document);
    expect(result.valid, result.valid ? "" : compileErrors(result)).toBe(true);
  });
});

describe("GET /docs", () => {
  it("serves an HTML page and every asset it links, from this process", async () => {
    const page = await get("/docs");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toContain('<div id="swagger-ui">');
    const links = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(links.sort()).toEqual([
      "docs/init.js",
      "docs/swagger-ui-bundle.js",
      "docs/swagger-ui.css",
    ]);
    for (const link of links) {
      expect(link, "relative to this server, not a CDN").not.toMatch(/^[a-z]+:|^\/\//);
      const asset = await get(`/${link}`);
      expect(asset.status, link).toBe(200);
      const body = await asset.text();
      if (link.endsWith(".css")) expect(asset.headers.get("content-type")).toMatch(/^text\/css/);
      else expect(asset.headers.get("content-type")).toMatch(/^application\/javascript/);
      expect(body.length, link).toBeGreaterThan(link.endsWith("init.js") ? 50 : 50_000);
    }
    const init = await (await get("/docs/init.js")).text();
    expect(init).toContain('url: "openapi.json"');
    expect(init).toContain("validatorUrl: null");
  });

  it("answers 404 for an asset it does not have", async () => {
    const missing = await get("/docs/..%2Fpackage.json");
    expect(missing.status).toBe(404);
    expect((await get("/docs/index.html")).status).toBe(404);
  });
});
