import { readFileSync } from "node:fs";
import net from "node:net";
import { describe, expect, it, vi } from "vitest";
import { freePort, PORT_RANGE } from "../../../bench/free-port.js";

const ephemeralStart = Number(
  readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").split(/\s+/)[0],
);

const bind = (port: number) =>
  new Promise<net.Server>((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });

describe("freePort (the test servers' and chaos harness's ports)", () => {
  it("picks ports below the kernel's ephemeral range, which outgoing connections draw on, free to bind", async () => {
    expect(PORT_RANGE.highest).toBe(ephemeralStart - 1);
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(PORT_RANGE.lowest);
      expect(port).toBeLessThan(ephemeralStart);
    }
    const server = await bind(ports[0]!);
    server.close();
  });

  it("passes over a port someone listens on and tries another", async () => {
    const held = await bind(await freePort());
    const heldPort = (held.address() as net.AddressInfo).port;
    let other = await freePort();
    while (other === heldPort) other = await freePort();
    // Math.random's value that draws this port.
    const drawing = (port: number) =>
      (port - PORT_RANGE.lowest + 0.5) / (PORT_RANGE.highest - PORT_RANGE.lowest + 1);
    const random = vi
      .spyOn(Math, "random")
      .mockReturnValueOnce(drawing(heldPort))
      .mockReturnValueOnce(drawing(other));
    try {
      expect(await freePort()).toBe(other);
      expect(random).toHaveBeenCalledTimes(2);
    } finally {
      random.mockRestore();
      held.close();
    }
  });
});
