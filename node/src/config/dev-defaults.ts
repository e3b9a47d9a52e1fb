/**
 * What `chronofence dev` embeds, and the defaults it changes for that
 * (config.ts holds the configuration itself).
 */
import { type Config, envNameOf } from "./config.js";

/** The parts `chronofence dev` embeds: each one whose service variable is unset or empty. */
export interface EmbeddedParts {
  /** PGlite in the data directory, instead of DATABASE_URL. */
  postgres: boolean;
  /** The in-process hot tier, instead of REDIS_URL. */
  hotTier: boolean;
  /** The in-process transport, instead of KAFKA_BROKERS. */
  transport: boolean;
}

const unset = (value: string | undefined): boolean => value === undefined || value === "";

export function embeddedPartsOf(env: Readonly<Record<string, string | undefined>>): EmbeddedParts {
  return {
    postgres: unset(env[envNameOf("databaseUrl")]),
    hotTier: unset(env[envNameOf("redisUrl")]),
    transport: unset(env[envNameOf("kafkaBrokers")]),
  };
}

/**
 * What `chronofence dev` changes of the defaults, each only while its own
 * variable is unset: it listens on the loopback interface only (it prints
 * a key anyway), its other listeners take free ports (a second dev on
 * another --port must not collide on /metrics), it logs warnings only (its
 * banner stays readable), and on the in-process transport — which loses
 * what it holds with the process — an ARMED task nobody started is re-armed
 * after 30 s rather than 5 min, and a publish does not linger (no broker
 * requests to save). On the embedded Postgres, tasks may be due
 * up to 30 days ahead and partitions are kept 7 days: each day is a
 * partition, and PGlite creates and plans across hundreds of them slowly
 * (a year's 398 took 40 s to create on a loaded 2-core machine, and every
 * statement not pruned by run_at paid for them; docs/operations.md).
 */
export function devDefaultsOf(
  env: Readonly<Record<string, string | undefined>>,
  parts: EmbeddedParts,
): Partial<Config> {
  const defaults: Partial<Config> = {
    host: "127.0.0.1",
    metricsPort: 0,
    workerMetricsPort: 0,
    logLevel: "warn",
    ...(parts.transport && { dispatchTimeoutMs: 30_000, outboxLingerMs: 0 }),
    ...(parts.postgres && { horizonDays: 30, retentionDays: 7 }),
  };
  return Object.fromEntries(
    Object.entries(defaults).filter(([key]) => unset(env[envNameOf(key as keyof Config)])),
  );
}
