/**
 * A TCP proxy that can be shut and opened again, on the same port: shut, it
 * stops listening (new connections are refused, as by a server that is down)
 * and cuts the connections it carried; opened, it forwards again. For tests
 * of a dependency that goes away and comes back without stopping the shared
 * server behind the proxy.
 */
import net from "node:net";

export interface GateProxy {
  port: number;
  shut(): Promise<void>;
  open(): Promise<void>;
  close(): Promise<void>;
}

export async function gateProxy(target: { host: string; port: number }): Promise<GateProxy> {
  const carried = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    carried.add(client);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      carried.delete(client);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
  const stopListening = () =>
    new Promise<void>((resolve) => {
      if (!server.listening) return resolve();
      server.close(() => resolve());
      for (const socket of carried) socket.destroy();
    });
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    shut: stopListening,
    open: () => (server.listening ? Promise.resolve() : listen(port)),
    close: stopListening,
  };
}
