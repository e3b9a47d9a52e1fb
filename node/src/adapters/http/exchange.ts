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
  /** The whole body, for routes that accept one; null otherwise. */
  body: Buffer | null;
}

export interface HttpReply {
  status: number;
  body: string;
  contentType?: string;
  headers?: Array<[string, string]>;
}

export interface Route {
  method: "get" | "post" | "del";
  /** uWS pattern syntax: `/v1/tasks/:id`. */
  pattern: string;
  /** The metrics label, e.g. `GET /v1/tasks/{id}`. */
  name: string;
  /** Accepts a body of at most this many bytes (413 beyond); omit for no body. */
  maxBodyBytes?: number;
  handle(request: HttpRequestData): Promise<HttpReply>;
}

export const json = (
  status: number,
  value: unknown,
  headers?: Array<[string, string]>,
): HttpReply =>
  headers === undefined
    ? { status, body: JSON.stringify(value) }
    : { status, body: JSON.stringify(value), headers };
