/**
 * The chaos topology: Chronofence as separate processes on services of the
 * run's own (services.ts), every process of node i connected through node
 * i's proxies (proxy.ts), so the nemesis can cut one node off one service.
 *
 *   node 1: api-1, dispatch-1, worker-1      proxies: postgres-1, redis-1, kafka-1
 *   node 2: api-2, dispatch-2, worker-2      proxies: postgres-2, redis-2, kafka-2
 *   node 3:        dispatch-3, worker-3      proxies: postgres-3, redis-3, kafka-3
 *
 * dispatch-i runs `--roles dispatcher,preloader,reconciler,planner`, worker-i
 * `--roles worker` with the recording handlers (handlers.mjs), api-i
 * `--roles api`. Leases and timeouts are short (CHAOS_TIMINGS) so that a
 * few-minute run sees failovers, re-arms and expiries many times over. The
 * database is migrated and partitioned, and the observer (observe.ts)
 * installed, before any role starts.
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import pg from "pg";
import { systemClock } from "../../node/src/adapters/clock/system-clock.js";
import { resolveConfig } from "../../node/src/config/config.js";
import {
  createTenant,
  ensureDatabase,
  runMaintenance,
  runMigrations,
} from "../../node/src/main/admin.js";
import { freePort } from "../free-port.js";
import { root } from "../support.js";
import { onCleanup } from "./cleanup.js";
import { installObserver } from "./observe.js";
import { type Crash, ManagedProcess, type ProcessKind } from "./processes.js";
import { type PartitionProxy, partitionProxy } from "./proxy.js";
import {
  type OwnKafka,
  type OwnPostgres,
  type OwnRedis,
  startOwnKafka,
  startOwnPostgres,
  startOwnRedis,
} from "./services.js";

/**
 * Short leases and quick repairs, so that a few minutes see many failovers,
 * re-arms and expiries; the nemesis's pauses outlast LEASE_MS. The dispatch
 * timeout stays well above the workers' backlog under the default load: a
 * re-arm republishes, and on an overloaded machine a timeout shorter than the
 * backlog fills the queues with envelopes the workers can only refuse
 * (docs/evidence.md, findings). `--set NAME=VALUE` overrides any of them.
 */
export const CHAOS_TIMINGS: Record<string, string> = {
  CF_LEASE_TTL_MS: "6000",
  CF_LEASE_HEARTBEAT_MS: "1000",
  CF_LEASE_SAFETY_MARGIN_MS: "1500",
  CF_CLAIM_TTL_MS: "10000",
  CF_DISPATCH_TIMEOUT_MS: "30000",
  CF_DISPATCH_DRAIN_MS: "2000",
  CF_PRELOAD_INTERVAL_MS: "2000",
  CF_RECONCILE_INTERVAL_MS: "1000",
  CF_PLAN_INTERVAL_MS: "500",
  CF_WORKER_LEASE_MS: "8000",
  CF_WORKER_HEARTBEAT_MS: "2000",
  CF_WORKER_SESSION_TIMEOUT_MS: "6000",
  CF_WORKER_RETRY_BASE_MS: "100",
  CF_DRAIN_TIMEOUT_MS: "5000",
  CF_REQUEST_TIMEOUT_MS: "8000",
  CF_PG_STATEMENT_TIMEOUT_MS: "5000",
  CF_PG_CONNECT_TIMEOUT_MS: "5000",
  CF_AUTH_CACHE_TTL_MS: "60000",
};
/** The longest lease a pause must outlast: the worker's execution lease (shard leases are 6 s). */
export const LEASE_MS = 8000;

/** How long the topology's first start gives each process to be ready. */
const FIRST_START_TIMEOUT_MS = 300_000;

export const DATABASE = "chaos";
export const REDIS_PREFIX = "chaos";
export const TOPIC_PREFIX = "chaos.";
const NODES = 3;

export interface TopologyOptions {
  dir: string;
  /** Process counts (the chaos run uses 2 APIs, 3 dispatch nodes, 3 workers). */
  apis?: number;
  dispatchers?: number;
  workers?: number;
  /** Install the transition recorder (the chaos run's checker needs it; the soak does not). */
  observe?: boolean;
  /** Tenants to create (default 4). */
  tenants?: number;
  /** More environment for every process. */
  env?: Record<string, string>;
}

export interface Topology {
  dir: string;
  postgres: OwnPostgres;
  redis: OwnRedis;
  kafka: OwnKafka;
  /** Per node (index node − 1). */
  proxies: { postgres: PartitionProxy[]; redis: PartitionProxy[]; kafka: PartitionProxy[] };
  processes: ManagedProcess[];
  apiUrls: string[];
  /** Direct (not proxied) URL of the run's database, for the harness. */
  databaseUrl: string;
  /** The workload's tenants: several, since Kafka partitions envelopes by tenant id. */
  tenants: Array<{ id: string; apiKey: string }>;
  crashes: Crash[];
  execDir: string;
  byName(name: string): ManagedProcess;
  ofKind(kind: ProcessKind): ManagedProcess[];
  /** Adds a process of `kind` on `node` (the recovery measurements add a fourth dispatch node). */
  addProcess(kind: ProcessKind, node: number, name: string): ManagedProcess;
  /** Runs `fn` on a fresh connection to the run's database. */
  withDb<T>(fn: (client: pg.Client) => Promise<T>): Promise<T>;
}

export async function startTopology(options: TopologyOptions): Promise<Topology> {
  const { dir } = options;
  const logDir = path.join(dir, "logs");
  const execDir = path.join(dir, "executions");
  await mkdir(logDir, { recursive: true });
  await mkdir(execDir, { recursive: true });

  const postgres = await startOwnPostgres(dir);
  const redis = await startOwnRedis();
  const nodes = Array.from({ length: NODES }, (_, i) => i + 1);
  const kafkaListenPorts = await Promise.all(nodes.map(() => freePort()));
  const kafkaProxies = await Promise.all(
    kafkaListenPorts.map((port) => partitionProxy({ host: "127.0.0.1", port })),
  );
  const pgProxies = await Promise.all(
    nodes.map(() => partitionProxy({ host: "127.0.0.1", port: postgres.port })),
  );
  const redisProxies = await Promise.all(
    nodes.map(() => partitionProxy({ host: "127.0.0.1", port: redis.port })),
  );
  const allProxies = [...kafkaProxies, ...pgProxies, ...redisProxies];
  onCleanup("proxies", () => Promise.all(allProxies.map((p) => p.close())).then(() => undefined));
  const kafka = await startOwnKafka(
    dir,
    kafkaListenPorts.map((listenPort, i) => ({
      listenPort,
      advertisedPort: kafkaProxies[i]!.port,
    })),
  );

  const databaseUrl = postgres.url(DATABASE);
  const adminConfig = resolveConfig({
    DATABASE_URL: databaseUrl,
    REDIS_URL: redis.url,
    CF_HORIZON_DAYS: "7",
    CF_RETENTION_DAYS: "2",
    LOG_LEVEL: "silent",
  });
  await ensureDatabase(databaseUrl);
  await runMigrations(adminConfig);
  await runMaintenance(adminConfig, systemClock);
  const withDb = async <T>(fn: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5000 });
    client.on("error", () => undefined);
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  if (options.observe !== false) await withDb(installObserver);
  const tenants: Array<{ id: string; apiKey: string }> = [];
  for (let i = 1; i <= (options.tenants ?? 4); i++) {
    const created = await createTenant(adminConfig, systemClock, `chaos-${i}`, {
      ratePerS: 100_000,
      burst: 100_000,
    });
    tenants.push({ id: created.tenant.id, apiKey: created.apiKey });
  }

  const crashes: Crash[] = [];
  const processes: ManagedProcess[] = [];
  const apiUrls: string[] = [];
  const nodeEnv = (node: number): Record<string, string> => ({
    DATABASE_URL: `postgres://postgres@127.0.0.1:${pgProxies[node - 1]!.port}/${DATABASE}`,
    REDIS_URL: `redis://127.0.0.1:${redisProxies[node - 1]!.port}`,
    KAFKA_BROKERS: `127.0.0.1:${kafkaProxies[node - 1]!.port}`,
    CF_REDIS_PREFIX: REDIS_PREFIX,
    CF_TOPIC_PREFIX: TOPIC_PREFIX,
    CF_KAFKA_PARTITIONS: "3",
    CF_HORIZON_DAYS: "7",
    CF_RETENTION_DAYS: "2",
    CF_METRICS_PORT: "0",
    CF_WORKER_METRICS_PORT: "0",
    CF_WORKER_HANDLERS: path.join(root, "bench/chaos/handlers.mjs"),
    CF_WORKER_CONCURRENCY_CRITICAL: "64",
    CF_WORKER_CONCURRENCY_STANDARD: "64",
    CF_WORKER_CONCURRENCY_BULK: "32",
    CF_WORKER_CONCURRENCY_OVERDUE: "32",
    CHAOS_EXEC_DIR: execDir,
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    ...CHAOS_TIMINGS,
    ...options.env,
  });
  const addProcess = (kind: ProcessKind, node: number, name: string): ManagedProcess => {
    const roles: Record<ProcessKind, string[]> = {
      api: ["run", "--roles", "api"],
      dispatch: ["run", "--roles", "dispatcher,preloader,reconciler,planner"],
      worker: ["run", "--roles", "worker"],
      watchdog: ["watchdog"],
    };
    const managed = new ManagedProcess({
      name,
      kind,
      node,
      args: roles[kind],
      env: () => nodeEnv(node),
      logDir,
      onCrash: (crash) => crashes.push(crash),
    });
    processes.push(managed);
    return managed;
  };
  const apiCount = options.apis ?? 2;
  for (let i = 1; i <= apiCount; i++) {
    const port = await freePort();
    const api = addProcess("api", ((i - 1) % NODES) + 1, `api-${i}`);
    const env = api.spec.env;
    api.spec.env = () => ({ ...env(), PORT: String(port) });
    api.spec.httpPort = port;
    apiUrls.push(`http://127.0.0.1:${port}`);
  }
  for (let i = 1; i <= (options.dispatchers ?? 3); i++)
    addProcess("dispatch", ((i - 1) % NODES) + 1, `dispatch-${i}`);
  for (let i = 1; i <= (options.workers ?? 3); i++)
    addProcess("worker", ((i - 1) % NODES) + 1, `worker-${i}`);
  onCleanup("chronofence processes", async () => {
    for (const p of processes) p.unsupervise();
    await Promise.all(processes.map((p) => p.kill9()));
  });
  // Dispatch nodes create the topics; then workers and APIs, each kind in parallel. A worker
  // is ready once it has joined its four groups, which on a loaded machine (load average
  // 50 on 2 cores, four topologies at once) took over two minutes.
  for (const kind of ["dispatch", "worker", "api"] as const)
    await Promise.all(
      processes.filter((p) => p.spec.kind === kind).map((p) => p.start(FIRST_START_TIMEOUT_MS)),
    );

  return {
    dir,
    postgres,
    redis,
    kafka,
    proxies: { postgres: pgProxies, redis: redisProxies, kafka: kafkaProxies },
    processes,
    apiUrls,
    databaseUrl,
    tenants,
    crashes,
    execDir,
    byName(name) {
      const found = processes.find((p) => p.name === name);
      if (!found) throw new Error(`no process ${name}`);
      return found;
    },
    ofKind: (kind) => processes.filter((p) => p.spec.kind === kind),
    addProcess,
    withDb,
  };
}

/** The process whose incarnation holds the `leader` lease now, if any. */
export async function leaderOf(topology: Topology): Promise<ManagedProcess | undefined> {
  const owner = await topology
    .withDb(async (c) => {
      const { rows } = await c.query(
        "SELECT owner FROM leases WHERE name = 'leader' AND expires_at > now()",
      );
      return rows[0]?.owner as string | undefined;
    })
    .catch(() => undefined);
  return topology.processes.find((p) => p.nodeId === owner);
}
