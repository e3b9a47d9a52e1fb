import { Command, InvalidArgumentError } from "commander";
import { offsetClock } from "../adapters/clock/offset-clock.js";
import { systemClock } from "../adapters/clock/system-clock.js";
import { createLogger } from "../adapters/logging/logger.js";
import { type Config, resolveConfig } from "../config/config.js";
import { DEFAULT_KEY_SCOPES, parseScopes, SCOPES, type Scope } from "../domain/api-keys.js";
import type { TenantLimits } from "../domain/tenant.js";
import type { TenantRecord } from "../ports/tenant-directory.js";
import { registerScheduleCommands } from "./schedules-cli.js";
import { registerTailCommand } from "./tail-cli.js";
import { registerTaskCommands } from "./tasks-cli.js";
import { registerWorkflowCommands } from "./workflows-cli.js";

/** The composition root of the `chronofence` command: each subcommand wires its own adapters. */
export async function main(argv: string[]): Promise<void> {
  const program = new Command()
    .name("chronofence")
    .description("Distributed task scheduler with a WebAssembly timing wheel")
    .showHelpAfterError();

  program
    .command("demo")
    .description("schedule a few timers on the Wasm wheel and print when they fire")
    .option("--count <n>", "timers to schedule", "5")
    .action(async (opts: { count: string }) => {
      const { runTimerDemo } = await import("./timer-demo.js");
      await runTimerDemo(Number(opts.count));
    });

  program
    .command("migrate")
    .description("apply new migrations from migrations/ (safe to run twice, or concurrently)")
    .option("--no-create-database", "fail instead of creating the database if it is missing")
    .action(async (opts: { createDatabase: boolean }) => {
      const config = loadConfig();
      const { ensureDatabase, runMigrations, runMaintenance } = await import("./admin.js");
      if (opts.createDatabase && (await ensureDatabase(config.databaseUrl))) {
        console.log("created database");
      }
      const result = await runMigrations(config);
      for (const name of result.applied) console.log(`applied ${name}`);
      console.log(`${result.applied.length} applied, ${result.skipped.length} already applied`);
      const report = await runMaintenance(config, systemClock);
      console.log(`partitions: ${report.created} created`);
    });

  program
    .command("maintain")
    .description("create task partitions ahead and drop those past retention")
    .action(async () => {
      const { runMaintenance } = await import("./admin.js");
      const report = await runMaintenance(loadConfig(), systemClock);
      console.log(JSON.stringify(report));
    });

  const tenants = program.command("tenants").description("manage tenants");
  withLimitOptions(
    tenants
      .command("create <name>")
      .description("create a tenant; prints its new API key as the last line"),
  ).action(async (name: string, opts: TenantLimitOptions) => {
    const { createTenant } = await import("./admin.js");
    const created = await createTenant(loadConfig(), systemClock, name, limitsOf(opts));
    console.log(`tenant ${created.tenant.id} ${created.tenant.name}`);
    console.log(`api key id ${created.apiKeyId}`);
    console.log(created.apiKey);
  });
  withLimitOptions(
    tenants
      .command("update <name>")
      .description(
        "change a tenant's limits and retry defaults (API processes apply them within CF_AUTH_CACHE_TTL_MS)",
      ),
  ).action(async (name: string, opts: TenantLimitOptions) => {
    const { updateTenant } = await import("./admin.js");
    const updated = await updateTenant(loadConfig(), systemClock, name, limitsOf(opts));
    if (!updated) throw new Error(`no tenant named ${name}`);
    console.log(tenantLine(updated));
  });
  tenants
    .command("list")
    .description("list tenants and their limits")
    .action(async () => {
      const { listTenants } = await import("./admin.js");
      for (const t of await listTenants(loadConfig(), systemClock)) console.log(tenantLine(t));
    });

  const keys = program.command("keys").description("manage API keys");
  keys
    .command("create <tenant>")
    .description("create another API key for a tenant; prints the new key as the last line")
    .option(
      "--scopes <list>",
      `what the key may do, of ${SCOPES.join(", ")}`,
      DEFAULT_KEY_SCOPES.join(","),
    )
    .action(async (tenantName: string, opts: { scopes: string }) => {
      const { createKey } = await import("./admin.js");
      const scopes = scopesOf(opts.scopes);
      const created = await createKey(loadConfig(), systemClock, tenantName, scopes);
      if (!created) throw new Error(`no tenant named ${tenantName}`);
      console.log(`api key id ${created.apiKeyId} scopes ${created.scopes.join(",")}`);
      console.log(created.apiKey);
    });
  keys
    .command("revoke <keyId>")
    .description("revoke an API key (API processes stop accepting it within CF_AUTH_CACHE_TTL_MS)")
    .action(async (keyId: string) => {
      const { revokeKey } = await import("./admin.js");
      if (!(await revokeKey(loadConfig(), systemClock, keyId))) {
        throw new Error(`no active API key ${keyId}`);
      }
      console.log(`revoked ${keyId}`);
    });

  registerTaskCommands(program);
  registerWorkflowCommands(program);
  registerScheduleCommands(program);
  registerTailCommand(program);

  program
    .command("watchdog")
    .description("canary tasks and dead man's switches, through the API (CF_API_URL, CF_API_KEY)")
    .action(async () => {
      const config = loadConfig();
      const logger = createLogger({ level: config.logLevel, name: "chronofence-watchdog" });
      const { startWatchdog } = await import("./watchdog.js");
      const running = await startWatchdog(config, systemClock, logger);
      console.log(`ready watchdog metrics_port=${running.metricsPort}`);
      await new Promise<void>((resolve) => {
        const stop = () => void running.stop().then(resolve);
        process.once("SIGTERM", stop);
        process.once("SIGINT", stop);
      });
    });

  program
    .command("dev")
    .description(
      "every role in one process, on an embedded Postgres, hot tier and transport unless DATABASE_URL, REDIS_URL, KAFKA_BROKERS are set (what npm start runs)",
    )
    .option("--data-dir <dir>", "the embedded Postgres and dev.json (CF_DATA_DIR; ./.chronofence)")
    .option("--port <n>", "the API's port (PORT)", portNumber)
    .option("--handlers <module>", "a module exporting user handlers (CF_WORKER_HANDLERS)")
    .action(async (opts: { dataDir?: string; port?: number; handlers?: string }) => {
      const { runDev } = await import("./dev.js");
      await runDev(process.env, opts);
    });

  program
    .command("run")
    .description("run one or more roles of Chronofence")
    .requiredOption(
      "--roles <list>",
      "comma-separated roles: api, dispatcher, preloader, reconciler, worker, planner",
    )
    .option(
      "--queues <list>",
      "worker: the queues to consume, of critical, standard, bulk, overdue (CF_WORKER_QUEUES)",
    )
    .option("--handlers <module>", "worker: a module exporting user handlers (CF_WORKER_HANDLERS)")
    .action(async (opts: { roles: string; queues?: string; handlers?: string }) => {
      const roles = opts.roles.split(",").map((r) => r.trim());
      const unknown = roles.filter(
        (r) => r !== "api" && r !== "worker" && r !== "planner" && !isDispatchRole(r),
      );
      if (unknown.length > 0)
        throw new Error(`unknown or not yet available roles: ${unknown.join(", ")}`);
      const overrides = {
        ...(opts.queues !== undefined && { workerQueues: opts.queues.replace(/\s+/g, "") }),
        ...(opts.handlers !== undefined && { workerHandlers: opts.handlers }),
      };
      await runUntilSignal(resolveConfig(process.env, overrides), roles);
    });

  await program.parseAsync(argv);
}

function loadConfig(): Config {
  return resolveConfig(process.env);
}

const DISPATCH_ROLE_NAMES: readonly string[] = ["dispatcher", "preloader", "reconciler"];
const isDispatchRole = (role: string): boolean => DISPATCH_ROLE_NAMES.includes(role);

/** Starts the roles; on SIGTERM or SIGINT stops them gracefully (dispatch roles first: they drain). */
async function runUntilSignal(config: Config, roles: string[]): Promise<void> {
  const logger = createLogger({ level: config.logLevel, name: "chronofence" });
  // Every role of the process reads this one clock (skewed only by CF_CLOCK_OFFSET_MS).
  const clock = offsetClock(systemClock, config.clockOffsetMs);
  process.on("unhandledRejection", (error) => logger.error({ err: error }, "unhandled rejection"));
  const stops: Array<() => Promise<void>> = [];
  const { runInfrastructure } = await import("./run-infrastructure.js");
  const infra = runInfrastructure(config, roles);
  const dispatchRoles = roles.filter(isDispatchRole);
  if (dispatchRoles.length > 0) {
    const { startDispatchRoles } = await import("./dispatch.js");
    const running = await startDispatchRoles(
      config,
      clock,
      logger,
      new Set(dispatchRoles as Array<"dispatcher" | "preloader" | "reconciler">),
      {},
      infra,
    );
    console.log(
      `ready ${running.nodeId} roles=${dispatchRoles.join(",")} metrics_port=${running.metricsPort}`,
    );
    stops.push(() => running.stop());
  }
  if (roles.includes("worker")) {
    const { startWorker } = await import("./worker.js");
    const worker = await startWorker(config, clock, logger, {}, infra);
    console.log(`ready ${worker.workerId} roles=worker metrics_port=${worker.metricsPort}`);
    stops.push(() => worker.stop());
  }
  if (roles.includes("planner")) {
    const { startPlanner } = await import("./planner.js");
    // Beside the dispatch roles, which listen on CF_METRICS_PORT, take any free port.
    const metricsPort = dispatchRoles.length > 0 ? 0 : config.metricsPort;
    const planner = await startPlanner(config, clock, logger, metricsPort);
    console.log(`ready ${planner.nodeId} roles=planner metrics_port=${planner.metricsPort}`);
    stops.push(() => planner.stop());
  }
  if (roles.includes("api")) {
    const { startApi } = await import("./api.js");
    const api = await startApi(config, clock, logger);
    stops.push(() => api.stop());
  }
  await new Promise<void>((resolve) => {
    const stop = async (signal: string) => {
      logger.info({ signal }, "shutting down");
      for (const stopRole of stops) await stopRole().catch(() => undefined);
      // Everything is drained and released; idle keep-alive sockets of
      // clients must not keep the process alive.
      logger.flush();
      setTimeout(() => process.exit(0), 100).unref();
      resolve();
    };
    process.once("SIGTERM", () => void stop("SIGTERM"));
    process.once("SIGINT", () => void stop("SIGINT"));
  });
}

function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError("must be a positive number");
  return n;
}

interface TenantLimitOptions {
  rate?: number;
  burst?: number;
  maxPayloadBytes?: number;
  graceMs?: number;
  maxAttempts?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
}

/** The options of `tenants create` and `tenants update`: a tenant's limits and retry defaults. */
function withLimitOptions(command: Command): Command {
  return command
    .option("--rate <n>", "tasks per second", positiveNumber)
    .option("--burst <n>", "bucket size in tasks", positiveInt)
    .option("--max-payload-bytes <n>", "largest task payload", positiveInt)
    .option("--grace-ms <n>", "lateness before a task counts as overdue", positiveInt)
    .option("--max-attempts <n>", "default max_attempts of its tasks (1-100)", positiveInt)
    .option("--backoff-base-ms <n>", "default backoff.base_ms of its tasks", positiveInt)
    .option("--backoff-max-ms <n>", "default backoff.max_ms of its tasks", positiveInt);
}

/** Only the limits given on the command line. */
function limitsOf(opts: TenantLimitOptions): Partial<TenantLimits> {
  return {
    ...(opts.rate !== undefined && { ratePerS: opts.rate }),
    ...(opts.burst !== undefined && { burst: opts.burst }),
    ...(opts.maxPayloadBytes !== undefined && { maxPayloadBytes: opts.maxPayloadBytes }),
    ...(opts.graceMs !== undefined && { graceMs: opts.graceMs }),
    retryDefaults: {
      ...(opts.maxAttempts !== undefined && { maxAttempts: opts.maxAttempts }),
      ...(opts.backoffBaseMs !== undefined && { backoffBaseMs: opts.backoffBaseMs }),
      ...(opts.backoffMaxMs !== undefined && { backoffMaxMs: opts.backoffMaxMs }),
    },
  };
}

function tenantLine(t: TenantRecord): string {
  const l = t.limits;
  const r = l.retryDefaults;
  const retry = `max_attempts=${r.maxAttempts ?? "-"} backoff_base=${r.backoffBaseMs ?? "-"}ms backoff_max=${r.backoffMaxMs ?? "-"}ms`;
  return `${t.id}  ${t.name}  rate=${l.ratePerS}/s burst=${l.burst} max_payload=${l.maxPayloadBytes}B grace=${l.graceMs}ms ${retry} keys=${t.activeKeys}`;
}

function scopesOf(value: string): Scope[] {
  const parsed = parseScopes(value);
  if (parsed.ok) return parsed.scopes;
  const bad = parsed.unknown.length > 0 ? `unknown: ${parsed.unknown.join(", ")}` : "none given";
  throw new Error(`--scopes: the scopes are ${SCOPES.join(", ")} (${bad})`);
}

function portNumber(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError("must be a port");
  return n;
}

function positiveInt(value: string): number {
  const n = positiveNumber(value);
  if (!Number.isInteger(n)) throw new InvalidArgumentError("must be a positive integer");
  return n;
}
