/**
 * One HTTP request on behalf of a tenant, as the `http` handler makes it:
 *
 *  1. resolve the host ourselves (every address DNS gives, not just one);
 *  2. refuse the request if any of them is an address the egress policy
 *     denies (egress-policy.ts): a name that points at loopback, the metadata
 *     service or a private range is refused whatever else it points at;
 *  3. connect to the address we checked, by its literal value, so a second
 *     resolution (DNS rebinding: public for the check, 127.0.0.1 for the
 *     connect) never happens; TLS still verifies the certificate against the
 *     host name (SNI);
 *  4. follow no redirect: a 3xx is the answer, and its Location is not
 *     fetched (a POST answered 302 would otherwise become a GET to any host,
 *     with our headers);
 *  5. read at most `maxResponseBytes` of the answer, then drop the connection.
 *
 * node:http rather than fetch(): undici's fetch resolves names itself and
 * follows redirects by default; here every step is ours to check.
 */
import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { EgressPolicy } from "./egress-policy.js";

export interface ResolvedAddress {
  address: string;
  family: number;
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  dns.promises.lookup(hostname, { all: true, verbatim: true });

export interface SafeFetchOptions {
  policy: EgressPolicy;
  maxResponseBytes: number;
  /** DNS (injected by tests to play a rebinding name). */
  resolve?: Resolver;
}

export interface SafeRequest {
  url: URL;
  method: "POST" | "GET";
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

export interface SafeResponse {
  status: number;
  /** The answer's body as UTF-8 text, cut at maxResponseBytes. */
  text: string;
  truncated: boolean;
}

/** The policy refused the destination: retrying cannot help. */
export class EgressRefusedError extends Error {
  readonly code = "egress_refused";
  readonly retryable = false;
}

/** Headers a payload may not set: they are the connection's, not the tenant's. */
const RESERVED_HEADERS = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "te",
  "trailer",
  "proxy-authorization",
  "proxy-connection",
]);

export async function safeFetch(
  request: SafeRequest,
  options: SafeFetchOptions,
): Promise<SafeResponse> {
  const { url } = request;
  const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
  const addresses =
    net.isIP(hostname) === 0
      ? await (options.resolve ?? systemResolver)(hostname)
      : [{ address: hostname, family: net.isIP(hostname) }];
  const refused = addresses.filter((a) => !options.policy.permits(hostname, port, a.address));
  if (addresses.length === 0 || refused.length > 0) {
    const to = refused.map((a) => a.address).join(", ") || "no address";
    throw new EgressRefusedError(
      `http handler: ${url.host} resolves to ${to}, which the worker may not reach (CF_HTTP_HANDLER_ALLOW)`,
    );
  }
  const target = addresses[0]!;
  const headers: Record<string, string> = { host: url.host };
  for (const [name, value] of Object.entries(request.headers)) {
    if (!RESERVED_HEADERS.has(name.toLowerCase())) headers[name] = value;
  }
  if (request.body !== undefined)
    headers["content-length"] = String(Buffer.byteLength(request.body));
  const transport = url.protocol === "https:" ? https : http;
  return new Promise<SafeResponse>((resolve, reject) => {
    const req = transport.request(
      {
        host: target.address,
        family: target.family,
        port,
        method: request.method,
        path: `${url.pathname}${url.search}`,
        headers,
        // TLS: SNI and the certificate check use the name, the socket the checked address.
        ...(net.isIP(hostname) === 0 && { servername: hostname }),
        ...(url.username !== "" && {
          auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`,
        }),
        agent: false,
        signal: request.signal,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        const done = () =>
          resolve({
            status: response.statusCode ?? 0,
            text: Buffer.concat(chunks, size).toString("utf8"),
            truncated,
          });
        response.on("data", (chunk: Buffer) => {
          if (truncated) return;
          const room = options.maxResponseBytes - size;
          if (chunk.length > room) {
            chunks.push(chunk.subarray(0, room));
            size += room;
            truncated = true;
            done();
            response.destroy(); // read no more of it
            return;
          }
          chunks.push(chunk);
          size += chunk.length;
        });
        response.on("end", done);
        response.on("error", (error) => (truncated ? undefined : reject(error)));
      },
    );
    req.on("error", reject);
    req.end(request.body);
  });
}
