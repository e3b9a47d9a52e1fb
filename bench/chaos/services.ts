/**
 * The chaos run's own Postgres cluster, redis-server and Kafka broker, on
 * ports of their own under one temporary directory, so that the nemesis may
 * restart, flush or stop them while other people use the machine's shared
 * services (5432, 6379, 9092), which this module never touches.
 *
 *  - Postgres: `initdb` + `pg_ctl` from CHAOS_PG_BIN (default
 *    /usr/lib/postgresql/15/bin). initdb refuses root, so as root every
 *    command runs as the `postgres` OS user (`runuser -u postgres --`) in a
 *    directory it owns. fsync is off: the nemesis kills server processes,
 *    never the machine, so the OS cache keeps every committed page and a
 *    restart in `immediate` mode still recovers all of it.
 *  - Redis: no persistence, so a restart is also a flush (as a cache is).
 *  - Kafka: scripts/kafka.sh with its own run directory and ports, data kept
 *    across restarts. Besides its own listener (`port`, for the harness) it
 *    has one listener per node, each advertised at that node's proxy, so every
 *    connection of a node's processes (metadata answers included) goes
 *    through the proxy that can partition that node (topology.ts).
 *
 * Every start registers its stop with cleanup.ts.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { chown, mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import pg from "pg";
import { freePort } from "../free-port.js";
import { root, sleepMs } from "../support.js";
import { onCleanup } from "./cleanup.js";

const run = promisify(execFile);

async function until(what: string, probe: () => Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await sleepMs(200);
  }
}

// ---------------------------------------------------------------- Postgres

export interface OwnPostgres {
  port: number;
  /** A URL of database `name` on this cluster (user postgres, trust). */
  url(name: string): string;
  /** `immediate` is a crash (recovery on start); `fast` a clean shutdown. */
  stop(mode: "immediate" | "fast"): Promise<void>;
  start(): Promise<void>;
  /** Starts it if it is not running (the nemesis's heal and the end of every run call it). */
  ensureRunning(): Promise<void>;
}

const PG_BIN = process.env.CHAOS_PG_BIN ?? "/usr/lib/postgresql/15/bin";

export async function startOwnPostgres(dir: string): Promise<OwnPostgres> {
  const port = await freePort();
  const data = path.join(dir, "pg");
  const asRoot = process.getuid?.() === 0;
  await mkdir(data, { recursive: true });
  if (asRoot) {
    const uid = Number((await run("id", ["-u", "postgres"])).stdout.trim());
    const gid = Number((await run("id", ["-g", "postgres"])).stdout.trim());
    await chown(dir, uid, gid);
    await chown(data, uid, gid);
  }
  const pgCommand = (tool: string, args: string[]) =>
    asRoot
      ? run("runuser", ["-u", "postgres", "--", path.join(PG_BIN, tool), ...args], {
          timeout: 120_000,
        })
      : run(path.join(PG_BIN, tool), args, { timeout: 120_000 });
  await pgCommand("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "-N"]);
  const settings = [
    `port = ${port}`,
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${dir}'`,
    "fsync = off",
    "full_page_writes = off",
    "max_connections = 300",
    "shared_buffers = 64MB",
    "logging_collector = off",
  ];
  await writeFile(path.join(data, "postgresql.auto.conf"), `${settings.join("\n")}\n`);
  if (asRoot) {
    const uid = Number((await run("id", ["-u", "postgres"])).stdout.trim());
    const gid = Number((await run("id", ["-g", "postgres"])).stdout.trim());
    await chown(path.join(data, "postgresql.auto.conf"), uid, gid);
  }
  const log = path.join(dir, "postgres.log");
  const running = () =>
    pgCommand("pg_ctl", ["status", "-D", data]).then(
      () => true,
      () => false,
    );
  const self: OwnPostgres = {
    port,
    url: (name) => `postgres://postgres@127.0.0.1:${port}/${name}`,
    async stop(mode) {
      if (await running()) await pgCommand("pg_ctl", ["stop", "-D", data, "-m", mode, "-w"]);
    },
    async start() {
      await pgCommand("pg_ctl", ["start", "-D", data, "-l", log, "-w", "-t", "120"]);
      await until("postgres accepts connections", () => answers(self.url("postgres")), 60_000);
    },
    async ensureRunning() {
      if (!(await running())) await self.start();
      else await until("postgres answers", () => answers(self.url("postgres")), 60_000);
    },
  };
  await self.start();
  onCleanup(`postgres on ${port}`, () => self.stop("immediate"));
  return self;
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

// ---------------------------------------------------------------- Redis

export interface OwnRedis {
  port: number;
  url: string;
  flushAll(): Promise<void>;
  stop(): Promise<void>;
  start(): Promise<void>;
  ensureRunning(): Promise<void>;
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  const ping = async () => {
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    redis.on("error", () => undefined);
    try {
      await redis.connect();
      return (await redis.ping()) === "PONG";
    } finally {
      redis.disconnect();
    }
  };
  const alive = () => child !== null && child.exitCode === null && child.signalCode === null;
  const self: OwnRedis = {
    port,
    url,
    async flushAll() {
      const redis = new Redis(url, { maxRetriesPerRequest: 1 });
      redis.on("error", () => undefined);
      try {
        await redis.flushall();
      } finally {
        redis.disconnect();
      }
    },
    async stop() {
      if (!alive()) return;
      const exited = new Promise((resolve) => child!.once("exit", resolve));
      child!.kill("SIGKILL");
      await exited;
    },
    async start() {
      const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly"];
      child = spawn("redis-server", [...args, "no"], { stdio: "ignore" });
      child.on("error", () => undefined);
      await until(`redis-server on ${port}`, ping, 20_000);
    },
    async ensureRunning() {
      if (!alive()) await self.start();
    },
  };
  await self.start();
  onCleanup(`redis-server on ${port}`, () => self.stop());
  return self;
}

// ---------------------------------------------------------------- Kafka

export interface OwnKafka {
  /** The broker's own listener, for the harness. */
  port: number;
  brokers: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  ensureRunning(): Promise<void>;
}

/**
 * `nodeListeners[i]`: the port the broker listens on for node i, and the
 * port it advertises for it (node i's proxy, which forwards to the first).
 */
export async function startOwnKafka(
  dir: string,
  nodeListeners: ReadonlyArray<{ listenPort: number; advertisedPort: number }>,
): Promise<OwnKafka> {
  const port = await freePort();
  const controllerPort = await freePort();
  const names = nodeListeners.map((_, i) => `N${i + 1}`);
  const listeners = [
    `PLAINTEXT://127.0.0.1:${port}`,
    `CONTROLLER://127.0.0.1:${controllerPort}`,
    ...nodeListeners.map((l, i) => `${names[i]}://127.0.0.1:${l.listenPort}`),
  ];
  const advertised = [
    `PLAINTEXT://127.0.0.1:${port}`,
    ...nodeListeners.map((l, i) => `${names[i]}://127.0.0.1:${l.advertisedPort}`),
  ];
  const protocols = ["PLAINTEXT", "CONTROLLER", ...names].map((n) => `${n}:PLAINTEXT`);
  const props = [
    `listeners=${listeners.join(",")}`,
    `advertised.listeners=${advertised.join(",")}`,
    `listener.security.protocol.map=${protocols.join(",")}`,
  ].join("\n");
  const env = {
    ...process.env,
    KAFKA_PORT: String(port),
    KAFKA_CONTROLLER_PORT: String(controllerPort),
    KAFKA_RUN_DIR: path.join(dir, "kafka"),
    KAFKA_KEEP_DATA: "1",
    KAFKA_HEAP: "384m",
    KAFKA_START_TIMEOUT: "240",
    KAFKA_EXTRA_PROPS: props,
  };
  const script = async (command: "start" | "stop" | "status") => {
    try {
      await run(path.join(root, "scripts", "kafka.sh"), [command], { env, timeout: 300_000 });
      return true;
    } catch (error) {
      if (command === "status") return false;
      const { stderr, stdout } = error as { stderr?: string; stdout?: string };
      throw new Error(`scripts/kafka.sh ${command} (port ${port}) failed: ${stderr || stdout}`);
    }
  };
  const self: OwnKafka = {
    port,
    brokers: `127.0.0.1:${port}`,
    stop: () => script("stop").then(() => undefined),
    start: () => script("start").then(() => undefined),
    async ensureRunning() {
      if (!(await script("status"))) await self.start();
    },
  };
  await self.start();
  onCleanup(`kafka on ${port}`, async () => {
    await self.stop();
    await rm(path.join(dir, "kafka"), { recursive: true, force: true });
  });
  return self;
}
