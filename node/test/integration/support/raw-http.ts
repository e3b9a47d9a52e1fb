import net from "node:net";

export interface RawAnswer {
  /** The status code, or null if the server closed without answering. */
  status: number | null;
}

/**
 * Sends bytes on a fresh TCP connection and returns the first status line's
 * code. Keeps its side open (a client that is merely slow), and gives up
 * after `timeoutMs`.
 */
export function rawRequest(
  port: number,
  data: Buffer | string,
  timeoutMs = 5000,
): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let received = "";
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(received);
      resolve({ status: match ? Number(match[1]) : null });
    };
    const timer = setTimeout(finish, timeoutMs);
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1");
      if (received.includes("\r\n")) finish();
    });
    socket.on("error", finish);
    socket.on("close", finish);
    socket.write(data);
  });
}
