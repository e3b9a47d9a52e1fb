/**
 * The uWebSockets.js adapter — the only file that imports it.
 *
 * uWS ground rules, all handled here so routes never see them:
 *  - `req` is valid only during the synchronous handler: copy what we need.
 *  - `res.onAborted` is attached before any async work; after an abort, or
 *    after we answered, `res` is never touched again (`state.done`).
 *  - Writes from async callbacks go inside `res.cork`.
 *  - Bodies arrive in chunks through `res.onData`, which must be attached
 *    in the synchronous handler (uWS drops chunks that come before it);
 *    chunks are copied (uWS neuters them on return).
 *  - A body route is admitted on its headers first (authentication, the
 *    caller's body limit): a refusal is answered before the body is read,
 *    closing the connection if the body is still coming; while admission
 *    waits on a lookup, the socket is paused, so at most what is already
 *    received gets buffered. The size limit is enforced while streaming:
 *    413 and close, without buffering the rest.
 *  - Framing a proxy could read otherwise (two Content-Lengths, a
 *    Transfer-Encoding other than `chunked`: framing.ts) is refused, 400
 *    and close, before any route runs; the bytes after such a request are
 *    never served as a request of their own.
 *  - uWS refuses async pipelining: a request that arrives while the one
 *    before it is unanswered closes the connection (aborting that one), so
 *    answers are never mixed up. A handler therefore starts on the next turn
 *    of the event loop, after uWS has parsed everything that arrived with
 *    its request: a request aborted by a follower in the same read is never
 *    acted on (nothing stored for a request that got no answer).
 * Every request has a deadline: if it has not been answered by then, it gets
 * 408 while the client still owes body bytes, 503 otherwise (a hung
 * dependency). Nothing a client sends can throw out of a uWS callback.
 *
 * The port is bound exclusively: by default uWS binds with SO_REUSEPORT, so
 * a second API on the same port (two `npm start`s, an old and a new
 * process) would bind too and the kernel would split the connections
 * between them without a word. Exclusive, the second fails at once, naming
 * the port.
 */
import uWS from "uWebSockets.js";
import { ChronofenceError, ErrorCode } from "../../domain/errors.js";
import { errorResponse } from "./errors.js";
import {
  type Admission,
  type BodyRoute,
  type HttpReply,
  type HttpRequestData,
  isBodyRoute,
  type Route,
} from "./exchange.js";
import { framingProblemOf } from "./framing.js";
import { bindError, probeBind } from "./metrics-server.js";

export interface HttpServerOptions {
  host: string;
  port: number;
  requestTimeoutMs: number;
  /** How long graceful shutdown waits for in-flight requests. */
  drainTimeoutMs: number;
  onRequest: (route: string, status: number) => void;
  onError: (error: unknown, route: string) => void;
  /** A monotonic ms clock, for deadlines. */
  monotonicMs: () => number;
}

interface Exchange {
  res: uWS.HttpResponse;
  route: string;
  deadlineMs: number;
  /**
   * admitting: waiting on our own lookup (a deadline then is ours: 503);
   * reading: admitted, waiting for the client's body (408);
   * handling: all received, the route is working (503).
   */
  phase: "admitting" | "reading" | "handling";
  /** Body bytes may still be on the wire: answering early must close the connection. */
  bodyPending: boolean;
  paused: boolean;
  done: boolean;
}

export class HttpServer {
  private readonly app = uWS.App();
  private listenSocket: uWS.us_listen_socket | null = null;
  private readonly inFlight = new Set<Exchange>();
  private sweeper: NodeJS.Timeout | null = null;
  private drainWaiters: Array<() => void> = [];
  private closing = false;

  constructor(
    routes: Route[],
    private readonly options: HttpServerOptions,
  ) {
    for (const route of routes) this.register(route);
    this.app.any("/*", (res, req) => {
      const exchange = this.begin(res, "unmatched");
      if (this.refusedFraming(exchange, req)) return;
      const known = routes.some((r) => matches(r.pattern, req.getUrl()));
      const error = known
        ? new ChronofenceError(ErrorCode.MethodNotAllowed, `method ${req.getMethod()} not allowed`)
        : new ChronofenceError(ErrorCode.RouteNotFound, "no such route");
      this.fail(exchange, error);
    });
  }

  /**
   * Binds the port, exclusively; resolves with the port actually bound (0
   * picks a free one). Rejects with a `bindError` naming the port when it is
   * taken.
   */
  listen(): Promise<number> {
    const { host, port } = this.options;
    return new Promise((resolve, reject) => {
      listenExclusive(this.app, host, port, (socket) => {
        // uWS says only "no": a plain bind of the same port tells why.
        if (!socket)
          return void probeBind(host, port).then((code) => reject(bindError(host, port, code)));
        this.listenSocket = socket;
        this.sweeper = setInterval(() => this.expireDeadlines(), 100);
        this.sweeper.unref();
        resolve(uWS.us_socket_local_port(socket));
      });
    });
  }

  /** Stops accepting, lets in-flight requests finish (bounded), then closes all connections. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.listenSocket) uWS.us_listen_socket_close(this.listenSocket);
    this.listenSocket = null;
    if (this.inFlight.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.drainWaiters.push(resolve)),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, this.options.drainTimeoutMs);
        }),
      ]);
      clearTimeout(timer);
    }
    if (this.sweeper) clearInterval(this.sweeper);
    this.app.close();
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  private register(route: Route): void {
    this.app[route.method](route.pattern, (res, req) => {
      const exchange = this.begin(res, route.name);
      if (this.refusedFraming(exchange, req)) return;
      const request = snapshot(req, res, route);
      if (!isBodyRoute(route)) return this.run(exchange, () => route.handle(request));
      const declared = req.getHeader("content-length");
      const chunked = req.getHeader("transfer-encoding") !== "";
      exchange.bodyPending = chunked || (declared !== "" && declared !== "0");
      this.receive(exchange, route, request, declared === "" ? null : Number(declared));
    });
  }

  /** Answers 400 and closes when the body's end is ambiguous (framing.ts); true if it did. */
  private refusedFraming(exchange: Exchange, req: uWS.HttpRequest): boolean {
    const problem = framingProblemOf((visit) => req.forEach(visit));
    if (problem === null) return false;
    const error = new ChronofenceError(
      ErrorCode.InvalidRequest,
      "ambiguous message framing: send one Content-Length, or Transfer-Encoding: chunked alone",
      { details: { reason: problem } },
    );
    // Close: where this request's body ends, hence where the next request starts, is unknown.
    // Not answered here: uWS would go on parsing the bytes after this request (a smuggled
    // one) within this same read and dispatch them, `Connection: close` or not. Left
    // pending, any request parsed after it makes uWS close the connection at once.
    setImmediate(() => this.fail(exchange, error, true));
    return true;
  }

  private begin(res: uWS.HttpResponse, route: string): Exchange {
    const exchange: Exchange = {
      res,
      route,
      deadlineMs: this.options.monotonicMs() + this.options.requestTimeoutMs,
      phase: "handling",
      bodyPending: false,
      paused: false,
      done: false,
    };
    res.onAborted(() => this.finish(exchange));
    this.inFlight.add(exchange);
    return exchange;
  }

  /**
   * Admits the request on its headers, then reads its body. Called inside the
   * uWS handler: onData is attached before it returns.
   */
  private receive(
    exchange: Exchange,
    route: BodyRoute,
    request: HttpRequestData,
    declaredBytes: number | null,
  ): void {
    const chunks: Buffer[] = [];
    let size = 0;
    let admission: Admission | null = null;
    const limitBytes = () => admission?.maxBodyBytes ?? route.maxBodyBytes;
    const proceed = () => {
      // uWS may still report an empty last chunk for a request that had no body.
      if (exchange.bodyPending || exchange.phase === "handling") return;
      exchange.phase = "handling";
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      this.run(exchange, () => admission!.handle(body));
    };
    exchange.phase = "admitting";
    exchange.res.onData((chunk, isLast) => {
      if (exchange.done) return;
      size += chunk.byteLength;
      if (size > limitBytes()) return this.tooLarge(exchange, limitBytes());
      chunks.push(Buffer.from(new Uint8Array(chunk))); // a copy: uWS reuses `chunk`
      if (!isLast) return;
      exchange.bodyPending = false;
      if (admission) proceed();
    });
    const admitted = (granted: Admission) => {
      if (exchange.done) return;
      this.resume(exchange);
      admission = granted;
      const tooLargeBytes = Math.max(declaredBytes ?? 0, size);
      if (tooLargeBytes > granted.maxBodyBytes)
        return this.tooLarge(exchange, granted.maxBodyBytes);
      exchange.phase = "reading";
      proceed();
    };
    const refused = (error: unknown) => {
      if (exchange.done) return;
      this.resume(exchange);
      this.fail(exchange, error, exchange.bodyPending);
    };
    let pending: Admission | Promise<Admission>;
    try {
      pending = route.admit(request);
    } catch (error) {
      refused(error);
      return;
    }
    if (!(pending instanceof Promise)) {
      admitted(pending);
      return;
    }
    // A lookup: read no more of the body until we know who is sending it.
    if (exchange.bodyPending) {
      exchange.res.pause();
      exchange.paused = true;
    }
    pending.then(admitted, refused);
  }

  private resume(exchange: Exchange): void {
    if (!exchange.paused || exchange.done) return;
    exchange.paused = false;
    exchange.res.resume();
  }

  /** Starts the handler on the next turn (see the header: pipelining), unless aborted by then. */
  private run(exchange: Exchange, handle: () => Promise<HttpReply>): void {
    setImmediate(() => {
      if (exchange.done) return;
      let pending: Promise<HttpReply>;
      try {
        pending = handle();
      } catch (error) {
        pending = Promise.reject(error);
      }
      pending.then(
        (reply) => this.reply(exchange, reply),
        (error: unknown) => this.fail(exchange, error),
      );
    });
  }

  private fail(exchange: Exchange, error: unknown, closeConnection = false): void {
    const response = errorResponse(error);
    if (response.status >= 500) this.options.onError(error, exchange.route);
    this.reply(
      exchange,
      { status: response.status, body: response.body, headers: response.headers },
      closeConnection,
    );
  }

  private tooLarge(exchange: Exchange, maxBytes: number): void {
    const error = new ChronofenceError(ErrorCode.PayloadTooLarge, "request body too large", {
      details: { max_body_bytes: maxBytes },
    });
    // Close: the rest of the body is still on the wire and we will not read it.
    this.fail(exchange, error, true);
  }

  private reply(exchange: Exchange, reply: HttpReply, closeConnection = false): void {
    if (exchange.done) return;
    this.finish(exchange);
    const { res } = exchange;
    res.cork(() => {
      res.writeStatus(STATUS_LINES[reply.status] ?? String(reply.status));
      res.writeHeader("Content-Type", reply.contentType ?? "application/json");
      if (this.closing) res.writeHeader("Connection", "close");
      for (const [name, value] of reply.headers ?? []) res.writeHeader(name, value);
      res.end(reply.body, closeConnection);
    });
    this.options.onRequest(exchange.route, reply.status);
  }

  private finish(exchange: Exchange): void {
    exchange.done = true;
    this.inFlight.delete(exchange);
    if (this.inFlight.size === 0 && this.drainWaiters.length > 0) {
      for (const resolve of this.drainWaiters.splice(0)) resolve();
    }
  }

  private expireDeadlines(): void {
    const nowMs = this.options.monotonicMs();
    for (const exchange of this.inFlight) {
      if (exchange.deadlineMs > nowMs) continue;
      if (exchange.phase === "reading") {
        const error = new ChronofenceError(
          ErrorCode.RequestTimeout,
          "request body not received in time",
        );
        this.fail(exchange, error, true);
      } else {
        const error = new ChronofenceError(ErrorCode.Unavailable, "request timed out");
        this.fail(exchange, error, exchange.bodyPending);
      }
    }
  }
}

function snapshot(req: uWS.HttpRequest, res: uWS.HttpResponse, route: Route): HttpRequestData {
  const params: string[] = [];
  if (route.pattern.includes(":")) params.push(req.getParameter(0) ?? "");
  return {
    method: req.getMethod(),
    path: req.getUrl(),
    query: req.getQuery() ?? "",
    params,
    authorization: req.getHeader("authorization"),
    clientAddress: Buffer.from(res.getRemoteAddressAsText()).toString(),
  };
}

function matches(pattern: string, url: string): boolean {
  const a = pattern.split("/");
  const b = url.split("/");
  return a.length === b.length && a.every((part, i) => part.startsWith(":") || part === b[i]);
}

const STATUS_LINES: Record<number, string> = {
  200: "200 OK",
  201: "201 Created",
  400: "400 Bad Request",
  401: "401 Unauthorized",
  403: "403 Forbidden",
  404: "404 Not Found",
  405: "405 Method Not Allowed",
  408: "408 Request Timeout",
  409: "409 Conflict",
  413: "413 Payload Too Large",
  422: "422 Unprocessable Entity",
  429: "429 Too Many Requests",
  500: "500 Internal Server Error",
  503: "503 Service Unavailable",
};

/** uWS's LIBUS_LISTEN_EXCLUSIVE_PORT: its typings declare the enum, its module does not export it. */
const LISTEN_EXCLUSIVE_PORT = 1 as uWS.ListenOptions;

/** uWS takes (host, port, options, callback); its typings know only (port, options, callback). */
function listenExclusive(
  app: uWS.TemplatedApp,
  host: string,
  port: number,
  callback: (socket: uWS.us_listen_socket | false) => void,
): void {
  const listen = app.listen as unknown as (
    host: string,
    port: number,
    options: uWS.ListenOptions,
    callback: (socket: uWS.us_listen_socket | false) => void,
  ) => uWS.TemplatedApp;
  listen.call(app, host, port, LISTEN_EXCLUSIVE_PORT, callback);
}
