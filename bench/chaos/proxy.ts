/**
 * A TCP proxy in front of one service for one node, so that the nemesis can
 * cut that node off from Postgres, Redis or Kafka while the others keep it.
 *
 * `partition()` is a black hole, as a dead link or a dropped route is: bytes
 * stop flowing both ways on the open connections, which stay open (no reset
 * ever arrives, so each client finds out through its own timeouts), and new
 * connections are accepted but never reach the service. `heal()` resets the
 * connections the partition held — by then TCP would have given up on them —
 * and forwards new ones again.
 */
import net from "node:net";
import { KafkaRequestFrames, type RequestRule } from "./kafka-requests.js";

export interface PartitionProxy {
  port: number;
  readonly partitioned: boolean;
  partition(): void;
  heal(): void;
  /**
   * In front of a Kafka broker: decide each request by its API key from now
   * on (kafka-requests.ts); null forwards every byte again.
   */
  kafkaRule(rule: RequestRule | null): void;
  /** Connections a Kafka rule has reset so far. */
  readonly resets: number;
  close(): Promise<void>;
}

export async function partitionProxy(
  target: { host: string; port: number },
  options: {
    listenPort?: number;
    /** The target is a Kafka broker whose requests `kafkaRule` may decide. */
    kafkaRequests?: boolean;
  } = {},
): Promise<PartitionProxy> {
  const open = new Set<net.Socket>();
  const held = new Set<net.Socket>();
  let partitioned = false;
  let rule: RequestRule | null = null;
  let resets = 0;
  const server = net.createServer((client) => {
    open.add(client);
    client.on("error", () => undefined);
    if (partitioned) {
      held.add(client);
      client.on("close", () => {
        open.delete(client);
        held.delete(client);
      });
      return;
    }
    const upstream = net.connect(target.port, target.host);
    // Frames are cut from the connection's start, so a rule set later still finds their bounds.
    const frames = options.kafkaRequests
      ? new KafkaRequestFrames(() => rule ?? (() => "forward"))
      : null;
    client.on("data", (chunk) => {
      if (held.has(client)) return;
      const out = frames ? frames.accept(chunk) : chunk;
      if (out === "reset") {
        resets++;
        end();
      } else if (out.length > 0) upstream.write(out);
    });
    upstream.on("data", (chunk) => {
      if (!held.has(client)) client.write(chunk);
    });
    const end = () => {
      open.delete(client);
      held.delete(client);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) =>
    server.listen(options.listenPort ?? 0, "127.0.0.1", resolve),
  );
  return {
    port: (server.address() as net.AddressInfo).port,
    get partitioned() {
      return partitioned;
    },
    partition() {
      partitioned = true;
      for (const socket of open) held.add(socket);
    },
    kafkaRule(next) {
      if (!options.kafkaRequests) throw new Error("kafkaRule: this proxy was not made for Kafka");
      rule = next;
    },
    get resets() {
      return resets;
    },
    heal() {
      partitioned = false;
      for (const socket of held) socket.destroy();
      held.clear();
    },
    close() {
      for (const socket of open) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
