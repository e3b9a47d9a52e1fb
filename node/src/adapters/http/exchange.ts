/**
 * The transport-neutral request/reply the route handlers see. Only server.ts
 * knows uWebSockets.js; swapping the HTTP library means rewriting that file.
 */
export interface HttpRequestData {
  method: string;
  path: string;
  /** Raw query string without the `?`. */
  query: string;
  /** Route parameters in pattern order. */
  params: string[];
  authorization: string;
  /** The peer's IP address as text (for the limit on failed authentications). */
  clientAddress: string;
}

export interface HttpReply {
  status: number;
  /** Text, or bytes (the dashboard's static files). */
  body: string | Uint8Array;
  contentType?: string;
  headers?: Array<[string, string]>;
}

export type Route = BodylessRoute | BodyRoute;

interface RouteBase {
  method: "get" | "post" | "patch" | "del";
  /** uWS pattern syntax: `/v1/tasks/:id`. */
  pattern: string;
  /** The metrics label, e.g. `GET /v1/tasks/{id}`. */
  name: string;
}

export interface BodylessRoute extends RouteBase {
  handle(request: HttpRequestData): Promise<HttpReply>;
}

/**
 * A route that takes a body. `admit` sees the request line and headers
 * before a byte of the body is read: it authenticates (a rejection, e.g.
 * 401, is answered at once, and the connection closed if the body is still
 * coming) and says how large a body this caller may send (413 beyond).
 */
export interface BodyRoute extends RouteBase {
  /** Never buffer more than this, whoever asks, even while `admit` is pending. */
  maxBodyBytes: number;
  admit(request: HttpRequestData): Admission | Promise<Admission>;
}

export interface Admission {
  /** The body limit for this caller (at most the route's maxBodyBytes). */
  maxBodyBytes: number;
  handle(body: Buffer): Promise<HttpReply>;
}

export const isBodyRoute = (route: Route): route is BodyRoute => "admit" in route;

export const json = (
  status: number,
  value: unknown,
  headers?: Array<[string, string]>,
): HttpReply =>
  headers === undefined
    ? { status, body: JSON.stringify(value) }
    : { status, body: JSON.stringify(value), headers };
