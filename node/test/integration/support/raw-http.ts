import net from "node:net";

export interface RawAnswer {
  /** The code of the first status line, or null if none arrived. */
  status: number | null;
  /** The server ended the connection (FIN or reset) before we gave up. */
  closed: boolean;
  /** Neither what we waited for nor a close arrived in time: the server sat silent. */
  timedOut: boolean;
}

export interface RawOptions {
  /** Give up after this long (then `timedOut`). */
  timeoutMs?: number;
  /** Wait until the server closes the connection, not just for a status line. */
  untilClosed?: boolean;
}

/**
 * Sends bytes on a fresh TCP connection and reports the first status line's
 * code and whether the server closed the connection. Keeps its own side open
 * (a client that is merely slow), so a close is the server's doing.
 */
export function rawRequest(
  port: number,
  data: Buffer | string,
  { timeoutMs = 5000, untilClosed = false }: RawOptions = {},
): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let received = "";
    let closed = false;
    let settled = false;
    const statusOf = () => {
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(received);
      return match ? Number(match[1]) : null;
    };
    const finish = (timedOut: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ status: statusOf(), closed, timedOut });
    };
    const timer = setTimeout(() => finish(true), timeoutMs);
    const onClosed = () => {
      closed = true;
      finish(false);
    };
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1");
      if (!untilClosed && received.includes("\r\n")) finish(false);
    });
    socket.on("end", onClosed);
    socket.on("error", onClosed); // a reset is a close too
    socket.on("close", onClosed);
    socket.write(data);
  });
}
