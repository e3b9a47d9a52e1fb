/** A throw-away redis-server of the test's own (on a free port), for tests that FLUSHALL or stop Redis. */
import { type ChildProcess, spawn } from "node:child_process";
import { Redis } from "ioredis";
import { freePort } from "../../../../bench/free-port.js";
import { waitUntil } from "./wait.js";

export interface OwnRedis {
  url: string;
  stop(): Promise<void>;
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  let child: ChildProcess;
  try {
    child = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      { stdio: "ignore" },
    );
  } catch (error) {
    throw new Error(`cannot start redis-server (${(error as Error).message}); install Redis`);
  }
  const failed = new Promise<never>((_, reject) =>
    child.once("error", (error) =>
      reject(new Error(`cannot start redis-server (${error.message}); install Redis`)),
    ),
  );
  const url = `redis://127.0.0.1:${port}`;
  const ping = async () => {
    const redis = new Redis(url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    redis.on("error", () => undefined);
    try {
      await redis.connect();
      return (await redis.ping()) === "PONG";
    } catch {
      return false;
    } finally {
      redis.disconnect();
    }
  };
  await Promise.race([failed, waitUntil(`redis-server on ${port}`, ping, (ok) => ok, 10_000)]);
  return {
    url,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
    },
  };
}
