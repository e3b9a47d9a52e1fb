/**
 * A minimal HTTP listener for the roles without the API: GET /metrics
 * (Prometheus text) and GET /healthz. node:http is enough for a scrape.
 * Callers bind it to CF_METRICS_HOST, loopback by default: the series name
 * tenants and task types, and a worker runs tenants' handlers (the http
 * handler refuses loopback for that reason too).
 * It binds its port exclusively (also from a cluster worker), as the API
 * does (server.ts), and fails naming the port when it is taken.
 */
import http from "node:http";
import net, { type AddressInfo } from "node:net";

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
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(bindError(host, port, error.code)),
    );
    server.listen({ port, host, exclusive: true }, resolve);
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

/** Why `host:port` could not be bound, as an error that names it; `code` is the errno (EADDRINUSE...). */
export function bindError(host: string, port: number, code: string | undefined): Error {
  const why =
    code === "EADDRINUSE"
      ? "the port is already in use (another Chronofence, or another program, listens there)"
      : code === "EACCES"
        ? "permission denied"
        : (code ?? "unknown reason");
  return Object.assign(new Error(`cannot listen on ${host}:${port}: ${why}`), { code });
}

/**
 * The errno a plain bind of `host:port` gets now — node:net binds without
 * SO_REUSEPORT, so a port held by any listener refuses it — or undefined if
 * the port is free (the bind is closed again at once).
 */
export function probeBind(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "unknown"));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(undefined)));
  });
}
