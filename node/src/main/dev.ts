/**
 * `chronofence dev` — what `npm start` runs: every role in one process
 * (api, preloader, dispatcher, reconciler, planner, worker with the built-in
 * handlers and `--handlers`), so that a task submitted for T runs at T with
 * nothing else installed (the anchor: Temporal's `temporal server start-dev`).
 *
 * The embedded default: with no DATABASE_URL, REDIS_URL or KAFKA_BROKERS,
 *  - Postgres is PGlite in `<data-dir>/pgdata` (adapters/pglite), running
 *    the same migrations and SQL as production;
 *  - the hot tier and the transport live in this process (adapters/memory).
 * Each variable that is set replaces its part on its own (e.g. a real
 * Postgres with the in-process hot tier and transport).
 *
 * On start it prints the API URL, the data directory, an API key of the
 * tenant `dev` (created on first start; the same key on later starts, read
 * back from `<data-dir>/dev.json`, which the CLI reads too) and a curl line.
 * One dev per data directory (`dev.lock`); the API's port is bound
 * exclusively, so a second dev on the same port fails at once, naming it.
 */

import {
  chmodSync,
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join, resolve } from "node:path";
import { systemClock } from "../adapters/clock/system-clock.js";
import { bindError, probeBind } from "../adapters/http/metrics-server.js";
import { createLogger, type Logger } from "../adapters/logging/logger.js";
import { MemoryHotTier } from "../adapters/memory/memory-hot-tier.js";
import { MemoryTransport } from "../adapters/memory/memory-transport.js";
import { ensureDatabase } from "../adapters/pg/database.js";
import { defaultMigrationsDirectory, migrate } from "../adapters/pg/migrate.js";
import type { PgPool } from "../adapters/pg/pool.js";
import { hashApiKey, PgTenantDirectory } from "../adapters/pg/tenant-directory.js";
import {
  type EmbeddedPostgres,
  openEmbeddedPostgres,
} from "../adapters/pglite/embedded-postgres.js";
import { type Config, resolveConfig } from "../config/config.js";
import { devDefaultsOf, type EmbeddedParts, embeddedPartsOf } from "../config/dev-defaults.js";
import { DEFAULT_KEY_SCOPES } from "../domain/api-keys.js";
import type { Clock } from "../ports/clock.js";
import { startApi } from "./api.js";
import { startDispatchRoles } from "./dispatch.js";
import { uuidv7From } from "./ids.js";
import { startPlanner } from "./planner.js";
import {
  type HotTiers,
  kafkaTransport,
  type PostgresPools,
  type RoleInfrastructure,
  serviceHotTiers,
  servicePostgres,
} from "./role-connections.js";
import { startWorker } from "./worker.js";

export const DEV_TENANT = "dev";
/** A tenant for one developer's machine: its limits are the machine's, not a quota. */
const DEV_TENANT_LIMITS = { ratePerS: 100_000, burst: 100_000 };

export interface DevFlags {
  dataDir?: string;
  port?: number;
  handlers?: string;
}

/** What `<data-dir>/dev.json` holds (mode 0600): where the API is and a key for it. */
export interface DevFile {
  api_url: string;
  api_key: string;
  tenant: string;
}

export async function runDev(
  env: Readonly<Record<string, string | undefined>>,
  flags: DevFlags,
): Promise<void> {
  const parts = embeddedPartsOf(env);
  const config = resolveConfig(env, {
    ...devDefaultsOf(env, parts),
    ...(flags.dataDir !== undefined && { dataDir: flags.dataDir }),
    ...(flags.port !== undefined && { port: flags.port }),
    ...(flags.handlers !== undefined && { workerHandlers: flags.handlers }),
  });
  const logger = createLogger({ level: config.logLevel, name: "chronofence-dev" });
  process.on("unhandledRejection", (error) => logger.error({ err: error }, "unhandled rejection"));
  const dataDir = resolve(config.dataDir);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const unlock = lockDataDir(dataDir);
  // In start order, which is also the order to stop them: the API first (no new tasks), the
  // planner, the dispatch roles (they give back or publish what they hold), then the worker.
  const roles: Array<{ stop(): Promise<void> }> = [];
  let embedded: EmbeddedPostgres | null = null;
  const stopAll = async () => {
    for (const role of roles) await role.stop().catch(() => undefined);
    await embedded?.close().catch(() => undefined);
    unlock();
  };
  try {
    // Before the seconds that opening Postgres takes: a taken port fails at once.
    if (config.port !== 0) {
      const taken = await probeBind(config.host, config.port);
      if (taken) throw bindError(config.host, config.port, taken);
    }
    if (parts.postgres) {
      embedded = await openEmbeddedPostgres(
        join(dataDir, "pgdata"),
        (error) => logger.warn({ err: error }, "embedded postgres error"),
        (error) => {
          // Nothing works without it: stop, so that it is seen and restarted (commits are on disk).
          logger.fatal({ err: error }, "embedded postgres died; stopping");
          logger.flush();
          process.exit(1);
        },
      );
    }
    const infra = await infrastructureOf(config, parts, embedded);
    const apiKey = await devKey(infra.postgres, dataDir, systemClock);
    const api = await startApi(config, systemClock, logger, {}, infra);
    roles.push(api);
    roles.push(await startPlanner(config, systemClock, logger, 0, infra));
    roles.push(await startDispatchRoles(config, systemClock, logger, DISPATCH, {}, infra));
    roles.push(await startWorker(config, systemClock, logger, {}, infra));
    const apiUrl = `http://${urlHost(config.host)}:${api.port}`;
    writeDevFile(dataDir, { api_url: apiUrl, api_key: apiKey, tenant: DEV_TENANT });
    printBanner(config, parts, dataDir, apiUrl, apiKey);
  } catch (error) {
    await stopAll();
    throw error;
  }
  await untilSignal(logger);
  await stopAll();
  logger.flush();
  // Idle keep-alive sockets of clients must not keep the process alive.
  setTimeout(() => process.exit(0), 100).unref();
}

const DISPATCH = new Set(["dispatcher", "preloader", "reconciler"] as const);

async function infrastructureOf(
  config: Config,
  parts: EmbeddedParts,
  embedded: EmbeddedPostgres | null,
): Promise<RoleInfrastructure> {
  let postgres: PostgresPools;
  if (embedded) {
    await embedded.migrate(await defaultMigrationsDirectory());
    postgres = { pool: (options) => embedded.pool(options.role) };
  } else {
    await ensureDatabase(config.databaseUrl);
    await migrate(config.databaseUrl, await defaultMigrationsDirectory());
    postgres = servicePostgres(config);
  }
  return {
    postgres,
    hotTiers: parts.hotTier ? inProcessHotTiers(new MemoryHotTier()) : serviceHotTiers(config),
    transport: parts.transport ? new MemoryTransport() : kafkaTransport(config),
  };
}

/** Every role of the process shares the one in-process hot tier; closing a view closes nothing. */
export const inProcessHotTiers = (tier: MemoryHotTier): HotTiers => ({
  open: () => ({
    hotTier: tier,
    dispatch: tier,
    connect: async () => undefined,
    close: async () => undefined,
  }),
});

/**
 * The key of dev.json if it still opens the API (the same key on every
 * start), else a new one: with the tenant `dev` on first start, or a new key
 * of that tenant (dev.json deleted, or a new data directory on a real Postgres).
 */
async function devKey(postgres: PostgresPools, dataDir: string, clock: Clock): Promise<string> {
  const pool: PgPool = postgres.pool({
    role: null,
    maxConnections: 1,
    statementTimeoutMs: 10_000,
    applicationName: "chronofence-dev",
    onError: () => undefined,
  });
  try {
    const tenants = new PgTenantDirectory(pool, uuidv7From(clock));
    const known = readDevFile(dataDir)?.api_key;
    if (known && (await tenants.authenticate(hashApiKey(known)))) return known;
    const issued = await tenants.createKey(DEV_TENANT, DEFAULT_KEY_SCOPES, clock.nowMs());
    if (issued) return issued.apiKey;
    return (await tenants.create(DEV_TENANT, DEV_TENANT_LIMITS, clock.nowMs())).apiKey;
  } finally {
    await pool.end();
  }
}

function readDevFile(dataDir: string): Partial<DevFile> | null {
  try {
    return JSON.parse(readFileSync(join(dataDir, "dev.json"), "utf8")) as Partial<DevFile>;
  } catch {
    return null; // none yet, or unreadable: a new key replaces it
  }
}

function writeDevFile(dataDir: string, file: DevFile): void {
  const path = join(dataDir, "dev.json");
  writeFileSync(path, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  chmodSync(path, 0o600); // the mode of writeFileSync applies only to a new file
}

/**
 * One dev per data directory: PGlite is a single process's database, and
 * two opening it would corrupt it. The lock names the pid holding it; a
 * lock whose process is gone (kill -9) is taken over.
 */
function lockDataDir(dataDir: string): () => void {
  const path = join(dataDir, "dev.lock");
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      return () => unlinkSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) throw error;
      const pid = Number(readFileSync(path, "utf8"));
      if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) {
        throw new Error(
          `the data directory ${dataDir} is in use by process ${pid} (another chronofence dev): ` +
            `stop it, or pass another --data-dir (if no such process runs, delete ${path})`,
        );
      }
      unlinkSync(path);
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

const urlHost = (host: string): string =>
  host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;

function printBanner(
  config: Config,
  parts: EmbeddedParts,
  dataDir: string,
  apiUrl: string,
  apiKey: string,
): void {
  const part = (embedded: boolean, what: string, variable: string) =>
    embedded ? `${what} (set ${variable} to use a server)` : `from ${variable}`;
  const lines = [
    "Chronofence dev: api, preloader, dispatcher, reconciler, planner and worker in this process",
    `  postgres:   ${part(parts.postgres, `embedded PGlite in ${join(dataDir, "pgdata")}`, "DATABASE_URL")}`,
    `  hot tier:   ${part(parts.hotTier, "in this process", "REDIS_URL")}`,
    `  transport:  ${part(parts.transport, "in this process", "KAFKA_BROKERS")}`,
    `  data dir:   ${dataDir}`,
    `  API:        ${apiUrl}`,
    `  API key:    ${apiKey} (tenant ${DEV_TENANT}; also in ${join(dataDir, "dev.json")})`,
    ...(config.workerHandlers === "" ? [] : [`  handlers:   ${config.workerHandlers}`]),
    "Submit a task (type echo: its payload becomes its result), then GET it:",
    `  curl -XPOST ${apiUrl}/v1/tasks -H "Authorization: Bearer ${apiKey}" -d '{"type":"echo","payload":{"hello":"world"},"delay_ms":2000}'`,
    `ready ${apiUrl}`,
  ];
  console.log(lines.join("\n"));
}

function untilSignal(logger: Logger): Promise<void> {
  return new Promise((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, "shutting down");
      resolve();
    };
    process.once("SIGTERM", () => stop("SIGTERM"));
    process.once("SIGINT", () => stop("SIGINT"));
  });
}
