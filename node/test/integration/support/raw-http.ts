/**
 * HTTP at the socket level, for what fetch cannot send: broken framing,
 * pipelined requests, bytes trickled one at a time. Each call opens a fresh
 * TCP connection and keeps its own side open (a client that is merely
 * slow), so a close is the server's doing.
 */
import net from "node:net";

export interface RawResponse {
  status: number;
  /** Lower-case names; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: string;
}

export interface RawAnswer {
  /** The code of the first status line, or null if none arrived. */
  status: number | null;
  /** Every complete response received, in order (bodies framed by Content-Length). */
  responses: RawResponse[];
  /** The server ended the connection (FIN or reset) before we gave up. */
  closed: boolean;
  /** Neither what we waited for nor a close arrived in time: the server sat silent. */
  timedOut: boolean;
  /** Everything received, as latin1 text. */
  received: string;
}

export interface RawOptions {
  /** Give up after this long (then `timedOut`). */
  timeoutMs?: number;
  /** Wait until the server closes the connection, not just for a status line. */
  untilClosed?: boolean;
  /** Wait until this many complete responses arrived (or a close). */
  untilResponses?: number;
}

export function rawRequest(
  port: number,
  data: Buffer | string,
  options: RawOptions = {},
): Promise<RawAnswer> {
  return rawExchange(port, (socket) => socket.write(data), options);
}

/**
 * Sends the first `atOnceBytes` of `data`, then one byte every `intervalMs`
 * (a slowloris client), until it is all sent or the server closes; resolves
 * as rawRequest does.
 */
export function trickle(
  port: number,
  data: string,
  intervalMs: number,
  options: RawOptions & { atOnceBytes?: number } = { untilClosed: true },
): Promise<RawAnswer & { sentBytes: number }> {
  let sentBytes = 0;
  let timer: NodeJS.Timeout | undefined;
  return rawExchange(
    port,
    (socket) => {
      if (options.atOnceBytes) {
        sentBytes = Math.min(options.atOnceBytes, data.length);
        socket.write(data.slice(0, sentBytes), "latin1");
      }
      const step = () => {
        if (socket.destroyed || sentBytes >= data.length) return;
        socket.write(data[sentBytes++]!, "latin1");
        timer = setTimeout(step, intervalMs);
      };
      step();
    },
    options,
  ).then((answer) => {
    clearTimeout(timer);
    return { ...answer, sentBytes };
  });
}

function rawExchange(
  port: number,
  start: (socket: net.Socket) => void,
  { timeoutMs = 5000, untilClosed = false, untilResponses }: RawOptions,
): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let received = "";
    let closed = false;
    let settled = false;
    const finish = (timedOut: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const responses = parseResponses(received);
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(received);
      resolve({ status: match ? Number(match[1]) : null, responses, closed, timedOut, received });
    };
    const timer = setTimeout(() => finish(true), timeoutMs);
    const onClosed = () => {
      closed = true;
      finish(false);
    };
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1");
      if (untilClosed) return;
      if (untilResponses !== undefined) {
        if (parseResponses(received).length >= untilResponses) finish(false);
      } else if (received.includes("\r\n")) finish(false);
    });
    socket.on("end", onClosed);
    socket.on("error", onClosed); // a reset is a close too
    socket.on("close", onClosed);
    start(socket);
  });
}

/** The complete responses at the start of `text`; a partial one at the end is left out. */
export function parseResponses(text: string): RawResponse[] {
  const responses: RawResponse[] = [];
  let at = 0;
  while (at < text.length) {
    const headEnd = text.indexOf("\r\n\r\n", at);
    if (headEnd < 0) break;
    const [statusLine, ...lines] = text.slice(at, headEnd).split("\r\n");
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? "");
    if (!match) break;
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const bodyStart = headEnd + 4;
    const length = Number(headers["content-length"] ?? 0);
    if (text.length < bodyStart + length) break;
    responses.push({
      status: Number(match[1]),
      headers,
      body: text.slice(bodyStart, bodyStart + length),
    });
    at = bodyStart + length;
  }
  return responses;
}

/** The `error.code` of a JSON error body, or null (uWS's own answers are HTML). */
export function errorCodeOf(body: string): string | null {
  try {
    const code = (JSON.parse(body) as { error?: { code?: unknown } }).error?.code;
    return typeof code === "string" ? code : null;
  } catch {
    return null;
  }
}
