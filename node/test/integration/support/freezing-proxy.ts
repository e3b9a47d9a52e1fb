/**
 * A TCP proxy whose `freeze()` makes every connection open now half-open: it
 * stops forwarding both ways and keeps the sockets open, as a frozen host or
 * a network partition does (no reset ever arrives). Connections made after
 * the freeze are forwarded as usual.
 */
import net from "node:net";

export interface FreezingProxy {
  port: number;
  freeze(): void;
  close(): Promise<void>;
}

/** `target` is read at each connection: a broker's port may be known only after the proxy's. */
export async function freezingProxy(
  target: () => { host: string; port: number },
): Promise<FreezingProxy> {
  const open = new Set<net.Socket>();
  const frozen = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const { host, port } = target();
    const upstream = net.connect(port, host);
    open.add(client);
    client.on("data", (chunk) => {
      if (!frozen.has(client)) upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (!frozen.has(client)) client.write(chunk);
    });
    const end = () => {
      open.delete(client);
      frozen.delete(client);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    freeze() {
      for (const socket of open) frozen.add(socket);
    },
    close() {
      for (const socket of open) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
