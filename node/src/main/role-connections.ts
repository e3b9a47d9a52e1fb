/**
 * What every role is given to reach its infrastructure: Postgres pools, the
 * hot tier and the transport. The composition roots of the roles (api.ts,
 * dispatch.ts, planner.ts, worker.ts) take it as an argument and build
 * nothing from the config themselves, so the same roles run on the real
 * services (`serviceInfrastructure`, from DATABASE_URL, REDIS_URL and
 * KAFKA_BROKERS) or on the embedded default of `chronofence dev` (dev.ts:
 * PGlite, in-process hot tier and transport), or any mix.
 *
 * Every connection error is reported to the role's log rather than thrown.
 */
import { KafkaPublisher } from "../adapters/kafka/kafka-publisher.js";
import {
  KafkaTaskConsumer,
  type TaskConsumerOptions,
} from "../adapters/kafka/kafka-task-consumer.js";
import { createPgPool, type PgPool } from "../adapters/pg/pool.js";
import { RedisDispatchHotTier } from "../adapters/redis/dispatch-hot-tier.js";
import { createRedis, RedisHotTier } from "../adapters/redis/hot-tier.js";
import type { Config } from "../config/config.js";
import type { CancelNotifier } from "../ports/cancel-notifier.js";
import type { DispatchHotTier } from "../ports/dispatch-hot-tier.js";
import type { HotTier } from "../ports/hot-tier.js";
import type { QueueConsumer, Transport } from "../ports/transport.js";

export type RoleErrorHandler = (error: unknown, what: string) => void;

export interface PoolOptions {
  /**
   * null: the login role; else a role to assume (the API's chronofence_api,
   * the background roles' least-privilege roles).
   */
  role: string | null;
  maxConnections: number;
  statementTimeoutMs: number;
  applicationName: string;
  onError: (error: Error) => void;
}

export interface PostgresPools {
  pool(options: PoolOptions): PgPool;
}

/** One connection to the hot tier, with the views the roles take of it. */
export interface HotTierConnection {
  hotTier: HotTier;
  dispatch: DispatchHotTier & CancelNotifier;
  /** Rejects if the hot tier is not reachable yet; the roles go on and it reconnects. */
  connect(): Promise<void>;
  close(): Promise<void>;
}

export interface HotTiers {
  open(onError: (error: unknown) => void): HotTierConnection;
}

export interface RoleInfrastructure {
  postgres: PostgresPools;
  hotTiers: HotTiers;
  transport: Transport;
}

/** Which background role a pool serves, for its least-privilege database role (migrations/000011). */
export type BackgroundRole = "dispatch" | "worker" | "planner";

const DATABASE_ROLE_OF = {
  dispatch: "dispatchDatabaseRole",
  worker: "workerDatabaseRole",
  planner: "plannerDatabaseRole",
} as const satisfies Record<BackgroundRole, keyof Config>;

/**
 * The pool of a background role, assuming its least-privilege database role
 * (chronofence_dispatch, _worker, _planner: they see every tenant's rows of
 * the tables they use, and nothing else; "" in its CF_*_DATABASE_ROLE keeps
 * the login role), its errors reported as `what: postgres connection`.
 */
export function rolePgPool(
  infra: RoleInfrastructure,
  config: Config,
  pool: { maxConnections: number; applicationName: string; role: BackgroundRole },
  onError: RoleErrorHandler,
): PgPool {
  const role = config[DATABASE_ROLE_OF[pool.role]];
  return pgPool(infra, config, pool, role === "" ? null : role, onError);
}

/** A pool as the login role itself, for the API's work across tenants (its node report). */
export function loginPgPool(
  infra: RoleInfrastructure,
  config: Config,
  pool: { maxConnections: number; applicationName: string },
  onError: RoleErrorHandler,
): PgPool {
  return pgPool(infra, config, pool, null, onError);
}

function pgPool(
  infra: RoleInfrastructure,
  config: Config,
  pool: { maxConnections: number; applicationName: string },
  role: string | null,
  onError: RoleErrorHandler,
): PgPool {
  return infra.postgres.pool({
    role,
    maxConnections: pool.maxConnections,
    statementTimeoutMs: config.pgStatementTimeoutMs,
    applicationName: pool.applicationName,
    onError: (error) => onError(error, "postgres connection"),
  });
}

export function serviceInfrastructure(config: Config): RoleInfrastructure {
  return {
    postgres: servicePostgres(config),
    hotTiers: serviceHotTiers(config),
    transport: kafkaTransport(config),
  };
}

export function servicePostgres(config: Config): PostgresPools {
  return {
    pool: (options) =>
      createPgPool({
        connectionString: config.databaseUrl,
        maxConnections: options.maxConnections,
        statementTimeoutMs: options.statementTimeoutMs,
        connectTimeoutMs: config.pgConnectTimeoutMs,
        role: options.role,
        applicationName: options.applicationName,
        onError: options.onError,
      }),
  };
}

export function serviceHotTiers(config: Config): HotTiers {
  return {
    open(onError) {
      const redis = createRedis({
        url: config.redisUrl,
        keyPrefix: config.redisKeyPrefix,
        commandTimeoutMs: config.redisCommandTimeoutMs,
        connectTimeoutMs: config.pgConnectTimeoutMs,
        onError,
      });
      const hotTier = new RedisHotTier(redis, config.redisKeyPrefix);
      return {
        hotTier,
        dispatch: new RedisDispatchHotTier(redis, config.redisKeyPrefix),
        connect: () => hotTier.connect(),
        close: () => hotTier.close(),
      };
    },
  };
}

export function kafkaTransport(config: Config): Transport {
  const brokers = config.kafkaBrokers.split(",");
  return {
    publisher: (clientId, onError) =>
      new KafkaPublisher({
        brokers,
        clientId,
        topicPrefix: config.topicPrefix,
        partitions: config.kafkaPartitions,
        replicationFactor: config.kafkaReplicationFactor,
        onError,
      }),
    consumer: (options) => {
      const consumerOptions: TaskConsumerOptions = {
        brokers,
        clientId: options.clientId,
        topicPrefix: config.topicPrefix,
        kind: options.kind,
        maxInFlight: options.maxInFlight,
        maxWaiting: options.maxWaiting,
        maxRetained: options.maxRetained,
        commitIntervalMs: config.workerCommitIntervalMs,
        sessionTimeoutMs: config.workerSessionTimeoutMs,
        onError: options.onError,
        ...(options.onRunning && { onRunning: options.onRunning }),
      };
      return config.kafkaConsumer === "platformatic"
        ? platformaticConsumer(consumerOptions)
        : new KafkaTaskConsumer(consumerOptions);
    },
  };
}

/**
 * The @platformatic/kafka consumer, loaded only when chosen: the package took
 * about 0.7 s to import (its option schemas are compiled as it loads), which
 * every process that starts a role paid while nearly all run kafkajs.
 */
function platformaticConsumer(options: TaskConsumerOptions): QueueConsumer {
  const consumer = import("../adapters/kafka/platformatic-task-consumer.js").then(
    ({ PlatformaticTaskConsumer }) => new PlatformaticTaskConsumer(options),
  );
  consumer.catch(() => undefined); // a failed import is start()'s error, not an unhandled rejection
  return {
    start: async (handle) => (await consumer).start(handle),
    stop: async () => (await consumer).stop(),
  };
}
