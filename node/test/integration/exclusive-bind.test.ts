/**
 * Every listener binds its port exclusively: a second API (uWebSockets.js,
 * which by default binds with SO_REUSEPORT and would silently split the
 * connections with the first) or /metrics listener on a port in use fails
 * at once, naming the port; the first keeps serving.
 */
import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "../../../bench/free-port.js";
import { startMetricsServer } from "../../src/adapters/http/metrics-server.js";
import { HttpServer } from "../../src/adapters/http/server.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const apiServer = (port: number) =>
  new HttpServer([], {
    host: "127.0.0.1",
    port,
    requestTimeoutMs: 1000,
    drainTimeoutMs: 0,
    monotonicMs: () => performance.now(),
    onRequest: () => undefined,
    onError: () => undefined,
  });

const metrics = { render: async () => ({ contentType: "text/plain", body: "up 1\n" }) };

describe("exclusive bind", () => {
  it("refuses a second API server on a port in use, naming it; the first keeps serving", async () => {
    // By number: a port the kernel picked (port 0) is not shared even without the
    // exclusive flag, so it would not show the flag's effect.
    const port = await freePort();
    const first = apiServer(port);
    await first.listen();
    closers.push(() => first.close());
    const second = apiServer(port);
    await expect(second.listen()).rejects.toThrow(
      `cannot listen on 127.0.0.1:${port}: the port is already in use`,
    );
    // uWS's default (SO_REUSEPORT) would have bound it: the kernel would split the connections.
    expect((await fetch(`http://127.0.0.1:${port}/nothing`)).status).toBe(404);
  });

  it("refuses an API server on a port a /metrics listener holds, and the other way round", async () => {
    const scrape = await startMetricsServer(metrics, "127.0.0.1", 0);
    closers.push(() => scrape.close());
    await expect(apiServer(scrape.port).listen()).rejects.toThrow(
      `cannot listen on 127.0.0.1:${scrape.port}: the port is already in use`,
    );
    const api = apiServer(0);
    const port = await api.listen();
    closers.push(() => api.close());
    await expect(startMetricsServer(metrics, "127.0.0.1", port)).rejects.toThrow(
      `cannot listen on 127.0.0.1:${port}: the port is already in use`,
    );
  });
});
