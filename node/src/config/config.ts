/**
 * The one typed configuration, resolved purely from an environment map (and
 * CLI overrides) in the composition root. Every setting has a documented
 * default; units are in the names. Nothing else reads process.env.
 */
import { z } from "zod";

const MiB = 1024 * 1024;
const DAY_MS = 86_400_000;

const intFromEnv = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
/** A Postgres role name, or "" for none. */
const roleName = z.string().regex(/^([A-Za-z_][A-Za-z0-9_]*)?$/);

const schema = z.object({
  /** PORT: HTTP port of the API role. */
  port: intFromEnv(0, 65535).default(8080),
  /** HOST: interface to bind. */
  host: z.string().min(1).default("0.0.0.0"),
  /** DATABASE_URL: Postgres, the system of record. */
  databaseUrl: z.string().min(1).default("postgres://postgres@127.0.0.1:5432/chronofence"),
  /** CF_DATABASE_ROLE: role the API SETs on its connections (subject to RLS); "" keeps the login role. */
  databaseRole: roleName.default("chronofence_api"),
  /** CF_DISPATCH_DATABASE_ROLE: role the dispatcher, pre-loader and reconciler SET (least privilege, docs/operations.md); "" keeps the login role. */
  dispatchDatabaseRole: roleName.default("chronofence_dispatch"),
  /** CF_WORKER_DATABASE_ROLE: role the worker SETs; "" keeps the login role. */
  workerDatabaseRole: roleName.default("chronofence_worker"),
  /** CF_PLANNER_DATABASE_ROLE: role the planner SETs; "" keeps the login role. */
  plannerDatabaseRole: roleName.default("chronofence_planner"),
  /** REDIS_URL: the hot tier. */
  redisUrl: z.string().min(1).default("redis://127.0.0.1:6379"),
  /** CF_REDIS_PREFIX: key prefix; keys are `<prefix>:{<shard>}:due`. */
  redisKeyPrefix: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/)
    .default("cf"),
  /** CF_HORIZON_DAYS: how far ahead run_at may be (422 beyond). */
  horizonDays: intFromEnv(1, 3650).default(365),
  /** CF_HOT_WINDOW_MS: tasks due within this window also go to Redis at ingest. */
  hotWindowMs: intFromEnv(0, 7 * DAY_MS).default(3_600_000),
  /** CF_RETENTION_DAYS: partitions of days older than this are dropped (if nothing is pending). */
  retentionDays: intFromEnv(1, 3650).default(30),
  /** CF_MAINTENANCE_INTERVAL_MS: how often the API role re-runs partition maintenance. */
  maintenanceIntervalMs: intFromEnv(1000, 7 * DAY_MS).default(3_600_000),
  /** CF_MAINTENANCE_RETRY_MS: a failed partition maintenance is retried after this (inserts need partitions ahead). */
  maintenanceRetryMs: intFromEnv(100, DAY_MS).default(10_000),
  /** CF_STATISTICS_INTERVAL_MS: how often the API role analyzes the current days' partitions that have no statistics yet. */
  statisticsIntervalMs: intFromEnv(100, DAY_MS).default(2000),
  /** CF_MAINTENANCE_STATEMENT_TIMEOUT_MS: statement_timeout of migrations and partition DDL. */
  maintenanceStatementTimeoutMs: intFromEnv(1000, 3_600_000).default(120_000),
  /** CF_PG_POOL_SIZE: connections of the API's Postgres pool. */
  pgPoolSize: intFromEnv(1, 200).default(8),
  /** CF_PG_STATEMENT_TIMEOUT_MS: server-side statement_timeout (client gives up 1 s later). */
  pgStatementTimeoutMs: intFromEnv(100, 600_000).default(5000),
  /** CF_PG_CONNECT_TIMEOUT_MS */
  pgConnectTimeoutMs: intFromEnv(100, 60_000).default(2000),
  /** CF_REDIS_COMMAND_TIMEOUT_MS */
  redisCommandTimeoutMs: intFromEnv(10, 60_000).default(1000),
  /** CF_GROUP_COMMIT_MAX_ROWS: most tasks in one group commit. */
  groupCommitMaxRows: intFromEnv(1, 100_000).default(5000),
  /** CF_GROUP_COMMIT_MAX_IN_FLIGHT: concurrent group commits (≤ pool size). */
  groupCommitMaxInFlight: intFromEnv(1, 64).default(3),
  /** CF_INGEST_MAX_QUEUED_ROWS: beyond this, ingest sheds load with 503. */
  ingestMaxQueuedRows: intFromEnv(1, 10_000_000).default(100_000),
  /** CF_REQUEST_TIMEOUT_MS: every request is answered by then (503 if a dependency hangs). */
  requestTimeoutMs: intFromEnv(100, 600_000).default(10_000),
  /** CF_DRAIN_TIMEOUT_MS: graceful shutdown waits this long for in-flight requests. */
  drainTimeoutMs: intFromEnv(0, 600_000).default(10_000),
  /** CF_AUTH_CACHE_TTL_MS: how long a verified API key is trusted without asking Postgres. */
  authCacheTtlMs: intFromEnv(0, 3_600_000).default(5000),
  /** CF_AUTH_NEGATIVE_CACHE_TTL_MS: how long an unknown key is refused without asking Postgres (capped at CF_AUTH_CACHE_TTL_MS). */
  authNegativeCacheTtlMs: intFromEnv(0, 3_600_000).default(1000),
  /** CF_AUTH_CACHE_MAX_KEYS: most verified keys the authentication cache holds (the oldest go first). */
  authCacheMaxKeys: intFromEnv(1, 10_000_000).default(100_000),
  /** CF_AUTH_NEGATIVE_CACHE_MAX_KEYS: most unknown keys remembered, apart from the verified ones. */
  authNegativeCacheMaxKeys: intFromEnv(1, 10_000_000).default(10_000),
  /** CF_AUTH_FAILURE_BURST: lookups of keys never seen valid one client (IPv4 address, IPv6 /64) may cause at once. */
  authFailureBurst: intFromEnv(1, 1_000_000).default(20),
  /** CF_AUTH_FAILURE_RATE_PER_S: ...and per second after that (then 429). */
  authFailureRatePerS: z.coerce.number().min(0).max(1_000_000).default(1),
  /** CF_MAX_BODY_BYTES: body limit of POST /v1/tasks (the tenant's payload limit applies too). */
  maxSingleBodyBytes: intFromEnv(1024, 64 * MiB).default(1 * MiB),
  /** CF_MAX_BATCH_BODY_BYTES: body limit of POST /v1/tasks/batch. */
  maxBatchBodyBytes: intFromEnv(1024, 1024 * MiB).default(16 * MiB),
  /** KAFKA_BROKERS: comma-separated host:port list. */
  kafkaBrokers: z.string().min(1).default("127.0.0.1:9092"),
  /** CF_TOPIC_PREFIX: prepended to the topic names (`<prefix>tasks.critical`, ...). */
  topicPrefix: z
    .string()
    .regex(/^[A-Za-z0-9._-]*$/)
    .default(""),
  /** CF_KAFKA_PARTITIONS: partitions of each topic Chronofence creates. */
  kafkaPartitions: intFromEnv(1, 10_000).default(8),
  /** CF_KAFKA_REPLICATION_FACTOR: replicas of each topic Chronofence creates. */
  kafkaReplicationFactor: intFromEnv(1, 16).default(1),
  /** CF_KAFKA_CONSUMER: the workers' Kafka client (platformatic: opt-in, docs/operations.md). */
  kafkaConsumer: z.enum(["kafkajs", "platformatic"]).default("kafkajs"),
  /** CF_NODE_ID: this process in leases (default: host-pid-random, set in the composition root). */
  nodeId: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,100}$/)
    .optional(),
  /** CF_LEASE_TTL_MS: how long a shard or leader lease lasts without renewal. */
  leaseTtlMs: intFromEnv(200, 600_000).default(10_000),
  /** CF_LEASE_HEARTBEAT_MS: how often leases are renewed and shares rebalanced. */
  leaseHeartbeatMs: intFromEnv(50, 600_000).default(3000),
  /** CF_LEASE_SAFETY_MARGIN_MS: a lease is trusted locally until ttl minus this (pauses, skew). */
  leaseSafetyMarginMs: intFromEnv(0, 600_000).default(2000),
  /** CF_CLAIM_INTERVAL_MS: how often each owned shard claims due-soon ids. */
  claimIntervalMs: intFromEnv(5, 60_000).default(100),
  /** CF_CLAIM_LOOKAHEAD_MS: claim (and arm) ids due within this. */
  claimLookaheadMs: intFromEnv(0, 600_000).default(2000),
  /** CF_CLAIM_BATCH: most ids per claim and per arm UPDATE. */
  claimBatchSize: intFromEnv(1, 2000).default(2000),
  /** CF_CLAIM_TTL_MS: a claim neither published nor given back by then is returned by the reconciler. */
  claimTtlMs: intFromEnv(1000, 3_600_000).default(60_000),
  /** CF_DISPATCH_DRAIN_MS: on release or SIGTERM, how long a shard may keep publishing what it holds. */
  dispatchDrainMs: intFromEnv(0, 600_000).default(3000),
  /** CF_DISPATCH_TIMEOUT_MS: ARMED and due this long with nobody starting it → the reconciler re-arms it. */
  dispatchTimeoutMs: intFromEnv(1000, 7 * DAY_MS).default(300_000),
  /** CF_PRELOAD_INTERVAL_MS: how often the pre-loader sweeps the hot window. */
  preloadIntervalMs: intFromEnv(100, 3_600_000).default(10_000),
  /** CF_PRELOAD_PAGE: tasks per pre-loader query (keyset pages). */
  preloadPageSize: intFromEnv(1, 100_000).default(5000),
  /**
   * CF_OUTBOX_LINGER_MS: how long a produce request waits after its first envelope for more
   * (0: it leaves at once). 2 ms took 3–8 % off the CPU per task end to end, with no worse
   * worker-start latency, at 1,000 and 5,000 tasks/s (bench/RESULTS.md, session 17). A process
   * with direct queues (CF_DIRECT_QUEUES) never lingers: its hand-off is the fast path.
   */
  outboxLingerMs: intFromEnv(0, 1000).default(2),
  /**
   * CF_OUTBOX_BUSY_LINGER_MS: the linger while the load is high (the last produce request carried
   * 16 envelopes or more); a light load keeps CF_OUTBOX_LINGER_MS, and with that 0 nothing
   * waits, busy or not. 5 ms took 0.02–0.03 cores
   * off the broker at 4,000 and 5,000 tasks/s in Kafka mode, 2.6 % of the CPU per task at
   * 4,000/s by the medians (nothing measurable at 5,000/s), and took the worker-start p99 at
   * 4,000/s from 199 to 97 ms by the medians of three runs (bench/RESULTS.md, session 31).
   */
  outboxBusyLingerMs: intFromEnv(0, 1000).default(5),
  /** CF_OUTBOX_MAX_IN_FLIGHT: produce requests in flight at once per dispatcher process. */
  outboxMaxInFlight: intFromEnv(1, 256).default(8),
  /** CF_OUTBOX_MAX_BATCH: most envelopes per produce request. */
  outboxMaxBatchTasks: intFromEnv(1, 100_000).default(500),
  /** CF_OUTBOX_MAX_BATCH_BYTES: most envelope bytes per produce request. */
  outboxMaxBatchBytes: intFromEnv(1024, 64 * MiB).default(512 * 1024),
  /**
   * CF_KAFKA_MAX_MESSAGE_BYTES: the largest envelope the dispatcher sends (the broker's
   * message.max.bytes, 1 MiB by default, less room for the record's overhead); a task whose
   * envelope is larger is DEAD (undeliverable) rather than retried for ever.
   */
  kafkaMaxMessageBytes: intFromEnv(1024, 1024 * MiB).default(1_000_000),
  /** CF_OUTBOX_RETRY_MS: a failed produce is retried after this. */
  outboxRetryMs: intFromEnv(1, 60_000).default(200),
  /** CF_RECONCILE_INTERVAL_MS: how often the leader reconciles. */
  reconcileIntervalMs: intFromEnv(100, 3_600_000).default(5000),
  /** CF_RECONCILE_AHEAD_MS: the reconciler re-hydrates SCHEDULED tasks due within this. */
  reconcileAheadMs: intFromEnv(0, 7 * DAY_MS).default(30_000),
  /** CF_RECONCILE_BATCH: most tasks each reconciler step changes per run. */
  reconcileBatchSize: intFromEnv(1, 100_000).default(2000),
  /** CF_DISPATCH_PG_POOL_SIZE: Postgres connections of the dispatcher roles. */
  dispatchPgPoolSize: intFromEnv(1, 200).default(4),
  /**
   * CF_METRICS_HOST: interface of the /metrics listeners of the roles other than the API.
   * Loopback: metrics name tenants and task types, and are for the host's scraper only.
   */
  metricsHost: z.string().min(1).default("127.0.0.1"),
  /** CF_METRICS_MAX_LABEL_VALUES: distinct tenant ids (and task types) a metric labels as themselves; the rest are "other". */
  metricsMaxLabelValues: intFromEnv(1, 100_000).default(100),
  /** CF_METRICS_PORT: /metrics of the roles other than the API (0: any free port). */
  metricsPort: intFromEnv(0, 65535).default(9464),
  /** CF_WORKER_QUEUES: the topics a worker consumes (critical, standard, bulk, overdue). */
  workerQueues: z
    .string()
    .regex(/^(critical|standard|bulk|overdue)(,(critical|standard|bulk|overdue))*$/)
    .default("critical,standard,bulk,overdue"),
  /**
   * CF_DIRECT_QUEUES: queues (of critical, standard, bulk, overdue) that a process running the
   * dispatcher and the worker keeps to itself: each envelope it fires goes to its own worker in
   * memory, not through Kafka ("direct" mode, docs/worker-role.md). Empty: none.
   */
  directQueues: z
    .string()
    .regex(/^((critical|standard|bulk|overdue)(,(critical|standard|bulk|overdue))*)?$/)
    .default(""),
  /**
   * CF_WORKER_CONCURRENCY_CRITICAL: tasks of the critical queue running at once per worker
   * process. A slot is held for the task's start and commit in Postgres too (tens of ms under
   * load), so even no-op tasks need a few hundred slots for thousands a second; waiting
   * handlers cost little memory.
   */
  workerConcurrencyCritical: intFromEnv(1, 10_000).default(256),
  /** CF_WORKER_CONCURRENCY_STANDARD */
  workerConcurrencyStandard: intFromEnv(1, 10_000).default(256),
  /** CF_WORKER_CONCURRENCY_BULK */
  workerConcurrencyBulk: intFromEnv(1, 10_000).default(128),
  /** CF_WORKER_CONCURRENCY_OVERDUE: late tasks still run, on their own budget plus the on-time queues' idle slots. */
  workerConcurrencyOverdue: intFromEnv(1, 10_000).default(64),
  /** CF_WORKER_TENANT_CONCURRENCY: most tasks of one tenant running at once, per queue and process. */
  workerTenantConcurrency: intFromEnv(1, 10_000).default(128),
  /** CF_WORKER_LEASE_MS: execution lease; renewed every CF_WORKER_HEARTBEAT_MS while a task runs. */
  workerLeaseMs: intFromEnv(500, 3_600_000).default(30_000),
  /** CF_WORKER_HEARTBEAT_MS */
  workerHeartbeatMs: intFromEnv(100, 3_600_000).default(10_000),
  /** CF_WORKER_PG_POOL_SIZE: Postgres connections per queue (queues do not share them). */
  workerPgPoolSize: intFromEnv(1, 200).default(4),
  /** CF_WORKER_HANDLERS: a module registering user handlers (see docs); empty: built-ins only. */
  workerHandlers: z.string().default(""),
  /** CF_WORKER_CPU_THREADS: threads of the piscina pool for CPU handlers. */
  workerCpuThreads: intFromEnv(1, 256).default(1),
  /** CF_WORKER_SESSION_TIMEOUT_MS: Kafka consumer session; a dead worker's partitions move after it. */
  workerSessionTimeoutMs: intFromEnv(6000, 300_000).default(10_000),
  /** CF_WORKER_MAX_RESULT_BYTES: a larger handler result fails the attempt (not retryable). */
  workerMaxResultBytes: intFromEnv(2, 64 * MiB).default(1 * MiB),
  /**
   * CF_HTTP_HANDLER_ALLOW: what the built-in http handler may reach beyond public addresses:
   * comma-separated CIDRs, addresses (any port) and host:port pairs (docs/operations.md).
   */
  httpHandlerAllow: z.string().default(""),
  /** CF_WORKER_METRICS_PORT: /metrics of the worker role (0: any free port). */
  workerMetricsPort: intFromEnv(0, 65535).default(9465),
  /** CF_WORKER_COALESCE_MAX: most starts and completions of one event-loop turn sent as one statement. */
  workerCoalesceMax: intFromEnv(1, 10_000).default(256),
  /** CF_WORKER_COMPLETION_LINGER_MS: how long a coalesced completion waits for more (0: the next turn). */
  workerCompletionLingerMs: intFromEnv(0, 1000).default(0),
  /**
   * CF_WORKER_BUSY_LINGER_MS: how long every coalesced start and completion of a direct queue
   * (CF_DIRECT_QUEUES) waits for more while the load is high (about 2,000 tasks/s or more; 0:
   * never). 3 ms took the CPU per task at 5,000/s in one process from 261 to 230–231 µs,
   * Postgres from 0.59 to 0.49–0.50 cores, for a worker-start p50 of 5 ms instead of 2; in Kafka
   * mode it saved nothing (bench/RESULTS.md, session 33).
   */
  workerBusyLingerMs: intFromEnv(0, 1000).default(3),
  /** CF_WORKER_RETRY_BASE_MS: first wait before a worker asks an unavailable Postgres again (doubles up to 2 s). */
  workerRetryBaseMs: intFromEnv(1, 60_000).default(100),
  /** CF_WORKER_MAX_RETAINED: most messages a queue holds behind an unfinished one before its fetch pauses. */
  workerMaxRetained: intFromEnv(1, 10_000_000).default(100_000),
  /**
   * CF_WORKER_MAX_WAITING: most messages a queue holds that wait (for their tenant's slot, or for
   * their run_at) and so do not count toward its fetch limit; then its fetch pauses.
   */
  workerMaxWaiting: intFromEnv(1, 1_000_000).default(10_000),
  /**
   * CF_WORKER_START_MAX_RETRIES: tries of a task's start while Postgres is unavailable before the
   * worker leaves it to the reconciler (re-armed after CF_DISPATCH_TIMEOUT_MS).
   */
  workerStartMaxRetries: intFromEnv(0, 1_000_000).default(30),
  /**
   * CF_WORKER_LEASE_MARGIN_MS: a worker trusts its execution lease until this long before its end
   * (counted from when the last renewal was sent, at most half of lease − heartbeat); past that,
   * unrenewed, the handler's signal aborts and the worker sends nothing more for that attempt.
   */
  workerLeaseMarginMs: intFromEnv(0, 3_600_000).default(2000),
  /** CF_WORKER_UNKNOWN_TYPE_RETRY_MS: a task no handler here serves is handed back, due again after this. */
  workerUnknownTypeRetryMs: intFromEnv(100, DAY_MS).default(30_000),
  /** CF_WORKER_UNKNOWN_TYPE_DEAD_AFTER_MS: ...and DEAD (unknown_type) once no worker had a handler for this long. */
  workerUnknownTypeDeadAfterMs: intFromEnv(0, 30 * DAY_MS).default(3_600_000),
  /** CF_WORKER_COMMIT_INTERVAL_MS: how often a queue commits the offsets of durable outcomes. */
  workerCommitIntervalMs: intFromEnv(10, 60_000).default(200),
  /** CF_CRON_PLAN_AHEAD_MS: the planner materialises occurrences due within this. */
  cronPlanAheadMs: intFromEnv(1000, DAY_MS).default(600_000),
  /** CF_CRON_OVERLAP_LEAD_MS: how long before an occurrence an overlap policy (skip, buffer_one) decides. */
  cronOverlapLeadMs: intFromEnv(100, 600_000).default(3000),
  /** CF_CRON_MISFIRE_GRACE_MS: an occurrence later than this when planned was missed (misfire policy applies). */
  cronMisfireGraceMs: intFromEnv(0, DAY_MS).default(60_000),
  /** CF_CRON_FIRE_ALL_CAP: most missed occurrences that misfire_policy fire_all runs per schedule. */
  cronFireAllCap: intFromEnv(1, 1000).default(100),
  /** CF_PLAN_INTERVAL_MS: how often the planner passes over its shards. */
  planIntervalMs: intFromEnv(50, 600_000).default(1000),
  /** CF_PLAN_BATCH: schedules per shard per planner transaction. */
  planBatchSize: intFromEnv(1, 100_000).default(1000),
  /** CF_PLAN_MAX_PER_PASS: most occurrences one schedule gets per planner pass. */
  planMaxPerPass: intFromEnv(1, 100_000).default(1000),
  /** CF_PLANNER_PG_POOL_SIZE: Postgres connections of the planner role. */
  plannerPgPoolSize: intFromEnv(1, 200).default(2),
  /** CF_API_URL: where the API is, for the processes that talk to it over HTTP (CLI schedules, watchdog). */
  apiUrl: z.url().default("http://127.0.0.1:8080"),
  /** CF_API_KEY: the API key those processes present. */
  apiKey: z.string().min(1).optional(),
  /** CF_WATCHDOG_CANARY_INTERVAL_MS: the watchdog submits a canary task this often. */
  watchdogCanaryIntervalMs: intFromEnv(100, DAY_MS).default(60_000),
  /** CF_WATCHDOG_CANARY_DELAY_MS: each canary is due this long after its submission. */
  watchdogCanaryDelayMs: intFromEnv(0, 3_600_000).default(5000),
  /** CF_WATCHDOG_CANARY_DEADLINE_MS: a canary not COMPLETED this long after submission raises the alert. */
  watchdogCanaryDeadlineMs: intFromEnv(100, DAY_MS).default(120_000),
  /** CF_WATCHDOG_CHECK_INTERVAL_MS: how often the watchdog checks canaries and dead man's switches. */
  watchdogCheckIntervalMs: intFromEnv(50, 3_600_000).default(5000),
  /** CF_WATCHDOG_WEBHOOK_URL: alerts (firing and resolved) are POSTed here as JSON. */
  watchdogWebhookUrl: z.url().optional(),
  /**
   * CF_ADMIN_TOKEN: the operator's credential for the dashboard's cluster page (GET /v1/cluster);
   * unset, that page shows nothing. Compared in constant time; at least 16 characters.
   */
  adminToken: z.string().min(16).max(512).optional(),
  /** CF_NODE_REPORT_INTERVAL_MS: how often each node writes its row of cluster_nodes and its tenants' activity. */
  nodeReportIntervalMs: intFromEnv(100, 600_000).default(5000),
  /** CF_UI_DIR: the built dashboard the API serves at /ui ("" = the package's dist/ui). */
  uiDir: z.string().default(""),
  /** CF_DATA_DIR: where `chronofence dev` keeps its embedded Postgres and dev.json (`--data-dir`). */
  dataDir: z.string().min(1).default(".chronofence"),
  /**
   * CF_CLOCK_OFFSET_MS: added to this process's wall clock (never to its monotonic one), for
   * fault injection: the chaos harness (bench/chaos) starts a node with a skewed clock. 0 in
   * production; a node whose clock runs ahead fires tasks early by as much (docs/evidence.md).
   */
  clockOffsetMs: z.coerce.number().int().min(-DAY_MS).max(DAY_MS).default(0),
  /** LOG_LEVEL */
  logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});

export type Config = z.infer<typeof schema>;

const ENV_NAMES: Record<keyof Config, string> = {
  port: "PORT",
  host: "HOST",
  databaseUrl: "DATABASE_URL",
  databaseRole: "CF_DATABASE_ROLE",
  dispatchDatabaseRole: "CF_DISPATCH_DATABASE_ROLE",
  workerDatabaseRole: "CF_WORKER_DATABASE_ROLE",
  plannerDatabaseRole: "CF_PLANNER_DATABASE_ROLE",
  redisUrl: "REDIS_URL",
  redisKeyPrefix: "CF_REDIS_PREFIX",
  horizonDays: "CF_HORIZON_DAYS",
  hotWindowMs: "CF_HOT_WINDOW_MS",
  retentionDays: "CF_RETENTION_DAYS",
  maintenanceIntervalMs: "CF_MAINTENANCE_INTERVAL_MS",
  maintenanceRetryMs: "CF_MAINTENANCE_RETRY_MS",
  statisticsIntervalMs: "CF_STATISTICS_INTERVAL_MS",
  maintenanceStatementTimeoutMs: "CF_MAINTENANCE_STATEMENT_TIMEOUT_MS",
  pgPoolSize: "CF_PG_POOL_SIZE",
  pgStatementTimeoutMs: "CF_PG_STATEMENT_TIMEOUT_MS",
  pgConnectTimeoutMs: "CF_PG_CONNECT_TIMEOUT_MS",
  redisCommandTimeoutMs: "CF_REDIS_COMMAND_TIMEOUT_MS",
  groupCommitMaxRows: "CF_GROUP_COMMIT_MAX_ROWS",
  groupCommitMaxInFlight: "CF_GROUP_COMMIT_MAX_IN_FLIGHT",
  ingestMaxQueuedRows: "CF_INGEST_MAX_QUEUED_ROWS",
  requestTimeoutMs: "CF_REQUEST_TIMEOUT_MS",
  drainTimeoutMs: "CF_DRAIN_TIMEOUT_MS",
  authCacheTtlMs: "CF_AUTH_CACHE_TTL_MS",
  authNegativeCacheTtlMs: "CF_AUTH_NEGATIVE_CACHE_TTL_MS",
  authCacheMaxKeys: "CF_AUTH_CACHE_MAX_KEYS",
  authNegativeCacheMaxKeys: "CF_AUTH_NEGATIVE_CACHE_MAX_KEYS",
  authFailureBurst: "CF_AUTH_FAILURE_BURST",
  authFailureRatePerS: "CF_AUTH_FAILURE_RATE_PER_S",
  maxSingleBodyBytes: "CF_MAX_BODY_BYTES",
  maxBatchBodyBytes: "CF_MAX_BATCH_BODY_BYTES",
  kafkaBrokers: "KAFKA_BROKERS",
  topicPrefix: "CF_TOPIC_PREFIX",
  kafkaPartitions: "CF_KAFKA_PARTITIONS",
  kafkaReplicationFactor: "CF_KAFKA_REPLICATION_FACTOR",
  kafkaConsumer: "CF_KAFKA_CONSUMER",
  nodeId: "CF_NODE_ID",
  leaseTtlMs: "CF_LEASE_TTL_MS",
  leaseHeartbeatMs: "CF_LEASE_HEARTBEAT_MS",
  leaseSafetyMarginMs: "CF_LEASE_SAFETY_MARGIN_MS",
  claimIntervalMs: "CF_CLAIM_INTERVAL_MS",
  claimLookaheadMs: "CF_CLAIM_LOOKAHEAD_MS",
  claimBatchSize: "CF_CLAIM_BATCH",
  claimTtlMs: "CF_CLAIM_TTL_MS",
  dispatchDrainMs: "CF_DISPATCH_DRAIN_MS",
  dispatchTimeoutMs: "CF_DISPATCH_TIMEOUT_MS",
  preloadIntervalMs: "CF_PRELOAD_INTERVAL_MS",
  preloadPageSize: "CF_PRELOAD_PAGE",
  outboxLingerMs: "CF_OUTBOX_LINGER_MS",
  outboxBusyLingerMs: "CF_OUTBOX_BUSY_LINGER_MS",
  outboxMaxInFlight: "CF_OUTBOX_MAX_IN_FLIGHT",
  outboxMaxBatchTasks: "CF_OUTBOX_MAX_BATCH",
  outboxMaxBatchBytes: "CF_OUTBOX_MAX_BATCH_BYTES",
  kafkaMaxMessageBytes: "CF_KAFKA_MAX_MESSAGE_BYTES",
  outboxRetryMs: "CF_OUTBOX_RETRY_MS",
  reconcileIntervalMs: "CF_RECONCILE_INTERVAL_MS",
  reconcileAheadMs: "CF_RECONCILE_AHEAD_MS",
  reconcileBatchSize: "CF_RECONCILE_BATCH",
  dispatchPgPoolSize: "CF_DISPATCH_PG_POOL_SIZE",
  metricsHost: "CF_METRICS_HOST",
  metricsMaxLabelValues: "CF_METRICS_MAX_LABEL_VALUES",
  metricsPort: "CF_METRICS_PORT",
  workerQueues: "CF_WORKER_QUEUES",
  directQueues: "CF_DIRECT_QUEUES",
  workerConcurrencyCritical: "CF_WORKER_CONCURRENCY_CRITICAL",
  workerConcurrencyStandard: "CF_WORKER_CONCURRENCY_STANDARD",
  workerConcurrencyBulk: "CF_WORKER_CONCURRENCY_BULK",
  workerConcurrencyOverdue: "CF_WORKER_CONCURRENCY_OVERDUE",
  workerTenantConcurrency: "CF_WORKER_TENANT_CONCURRENCY",
  workerLeaseMs: "CF_WORKER_LEASE_MS",
  workerHeartbeatMs: "CF_WORKER_HEARTBEAT_MS",
  workerPgPoolSize: "CF_WORKER_PG_POOL_SIZE",
  workerHandlers: "CF_WORKER_HANDLERS",
  workerCpuThreads: "CF_WORKER_CPU_THREADS",
  workerSessionTimeoutMs: "CF_WORKER_SESSION_TIMEOUT_MS",
  workerMaxResultBytes: "CF_WORKER_MAX_RESULT_BYTES",
  httpHandlerAllow: "CF_HTTP_HANDLER_ALLOW",
  workerMetricsPort: "CF_WORKER_METRICS_PORT",
  workerCoalesceMax: "CF_WORKER_COALESCE_MAX",
  workerCompletionLingerMs: "CF_WORKER_COMPLETION_LINGER_MS",
  workerBusyLingerMs: "CF_WORKER_BUSY_LINGER_MS",
  workerRetryBaseMs: "CF_WORKER_RETRY_BASE_MS",
  workerMaxRetained: "CF_WORKER_MAX_RETAINED",
  workerMaxWaiting: "CF_WORKER_MAX_WAITING",
  workerStartMaxRetries: "CF_WORKER_START_MAX_RETRIES",
  workerLeaseMarginMs: "CF_WORKER_LEASE_MARGIN_MS",
  workerUnknownTypeRetryMs: "CF_WORKER_UNKNOWN_TYPE_RETRY_MS",
  workerUnknownTypeDeadAfterMs: "CF_WORKER_UNKNOWN_TYPE_DEAD_AFTER_MS",
  workerCommitIntervalMs: "CF_WORKER_COMMIT_INTERVAL_MS",
  cronPlanAheadMs: "CF_CRON_PLAN_AHEAD_MS",
  cronOverlapLeadMs: "CF_CRON_OVERLAP_LEAD_MS",
  cronMisfireGraceMs: "CF_CRON_MISFIRE_GRACE_MS",
  cronFireAllCap: "CF_CRON_FIRE_ALL_CAP",
  planIntervalMs: "CF_PLAN_INTERVAL_MS",
  planBatchSize: "CF_PLAN_BATCH",
  planMaxPerPass: "CF_PLAN_MAX_PER_PASS",
  plannerPgPoolSize: "CF_PLANNER_PG_POOL_SIZE",
  apiUrl: "CF_API_URL",
  apiKey: "CF_API_KEY",
  watchdogCanaryIntervalMs: "CF_WATCHDOG_CANARY_INTERVAL_MS",
  watchdogCanaryDelayMs: "CF_WATCHDOG_CANARY_DELAY_MS",
  watchdogCanaryDeadlineMs: "CF_WATCHDOG_CANARY_DEADLINE_MS",
  watchdogCheckIntervalMs: "CF_WATCHDOG_CHECK_INTERVAL_MS",
  watchdogWebhookUrl: "CF_WATCHDOG_WEBHOOK_URL",
  adminToken: "CF_ADMIN_TOKEN",
  nodeReportIntervalMs: "CF_NODE_REPORT_INTERVAL_MS",
  uiDir: "CF_UI_DIR",
  dataDir: "CF_DATA_DIR",
  clockOffsetMs: "CF_CLOCK_OFFSET_MS",
  logLevel: "LOG_LEVEL",
};

export const envNameOf = (key: keyof Config): string => ENV_NAMES[key];

const ROLE_KEYS = [
  "databaseRole",
  "dispatchDatabaseRole",
  "workerDatabaseRole",
  "plannerDatabaseRole",
] as const;

/**
 * Resolves the configuration: defaults, then the environment, then explicit
 * overrides (CLI flags, tests). Throws one error listing every bad setting.
 */
export function resolveConfig(
  env: Readonly<Record<string, string | undefined>>,
  overrides: Partial<Config> = {},
): Config {
  const raw: Record<string, unknown> = {};
  for (const [key, name] of Object.entries(ENV_NAMES)) {
    const value = env[name];
    if (value !== undefined && value !== "") raw[key] = value;
  }
  // "" means "no role": the login role (any other empty variable means "the default").
  for (const key of ROLE_KEYS) if (env[ENV_NAMES[key]] === "") raw[key] = "";
  const parsed = schema.safeParse({ ...raw, ...overrides });
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const key = String(issue.path[0]) as keyof Config;
      return `${ENV_NAMES[key] ?? key}: ${issue.message}`;
    });
    throw new Error(`invalid configuration: ${problems.join("; ")}`);
  }
  if (parsed.data.groupCommitMaxInFlight > parsed.data.pgPoolSize) {
    throw new Error(
      "invalid configuration: CF_GROUP_COMMIT_MAX_IN_FLIGHT must not exceed CF_PG_POOL_SIZE",
    );
  }
  const lease = parsed.data;
  if (lease.leaseHeartbeatMs + lease.leaseSafetyMarginMs >= lease.leaseTtlMs) {
    throw new Error(
      "invalid configuration: CF_LEASE_HEARTBEAT_MS + CF_LEASE_SAFETY_MARGIN_MS must be below CF_LEASE_TTL_MS",
    );
  }
  if (lease.workerHeartbeatMs >= lease.workerLeaseMs) {
    throw new Error(
      "invalid configuration: CF_WORKER_HEARTBEAT_MS must be below CF_WORKER_LEASE_MS",
    );
  }
  return parsed.data;
}

export const horizonMsOf = (config: Config): number => config.horizonDays * DAY_MS;
