/**
 * A loopback port nobody listens on now, for a server of the caller's own
 * (a test's or the chaos harness's Postgres, Redis, Kafka, proxy) to bind by
 * number. It is picked below the kernel's ephemeral range: a port the kernel
 * hands out for port 0 comes from that range, which it also draws on for
 * every outgoing connection, and one of those took a port in the seconds a
 * Kafka broker's JVM needed to bind it (chaos.test.ts in CI, 2026-12-06:
 * "Address already in use"). Random within the range, so that test files
 * running side by side rarely try the same one.
 */
import { readFileSync } from "node:fs";
import net from "node:net";

const TRIES = 100;

/**
 * Where freePort draws from: above the well-known ports and those of the
 * services we run (5432, 6379, 9092), below the first ephemeral port (Linux's
 * default where /proc cannot be read).
 */
export const PORT_RANGE = { lowest: 10_000, highest: ephemeralStart() - 1 };

export async function freePort(): Promise<number> {
  const { lowest, highest } = PORT_RANGE;
  for (let i = 0; i < TRIES; i++) {
    const port = lowest + Math.floor(Math.random() * (highest - lowest + 1));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free loopback port between ${lowest} and ${highest} in ${TRIES} tries`);
}

function ephemeralStart(): number {
  try {
    const low = Number(
      readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").split(/\s+/)[0],
    );
    return Number.isInteger(low) && low > 11_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}
