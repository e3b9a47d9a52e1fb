/**
 * A minimal HTTP listener for the roles without the API: GET /metrics
 * (Prometheus text) and GET /healthz. node:http is enough for a scrape.
 * Callers bind it to CF_METRICS_HOST, loopback by default: the series name
 * tenants and task types, and a worker runs tenants' handlers (the http
 * handler refuses loopback for that reason too).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface MetricsSource {
  render(): Promise<{ contentType: string; body: string }>;
}

export interface MetricsServer {
  /** The address bound (e.g. 127.0.0.1). */
  address: string;
  port: number;
  close(): Promise<void>;
}

export async function startMetricsServer(
  source: MetricsSource,
  host: string,
  port: number,
): Promise<MetricsServer> {
  const server = http.createServer((request, response) => {
    if (request.method === "GET" && request.url === "/metrics") {
      source.render().then(
        ({ contentType, body }) =>
          response.writeHead(200, { "content-type": contentType }).end(body),
        () => response.writeHead(500).end(),
      );
    } else if (request.method === "GET" && request.url === "/healthz") {
      response.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, resolve);
  });
  const bound = server.address() as AddressInfo;
  return {
    address: bound.address,
    port: bound.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
