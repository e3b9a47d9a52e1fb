/**
 * Driving workflows on Postgres through the production execution path, for
 * tests of the releaser without worker processes: a node "runs" as the
 * dispatcher arms it (ARM_TASKS, under a shard lease this helper holds) and
 * a worker starts it, then ends in the worker's fenced completion or failure
 * (PgExecutionStore.complete / fail), whose transaction runs the releaser
 * (release-terminal.ts) before it commits — the statements a real worker
 * sends, in the same transactions.
 *
 * A test that must hold that transaction open (lock, crash and pruning tests)
 * passes `beforeCommit`: the store then runs on the test's own connection,
 * and the hook runs just before its COMMIT.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { systemClock } from "../../../src/adapters/clock/system-clock.js";
import { PgDispatchStore } from "../../../src/adapters/pg/dispatch-store.js";
import { PgExecutionStore } from "../../../src/adapters/pg/execution-store.js";
import { PgLeaseStore } from "../../../src/adapters/pg/lease-store.js";
import { createPgPool, type PgPool } from "../../../src/adapters/pg/pool.js";
import { PgWorkflowStore } from "../../../src/adapters/pg/workflow-store.js";
import { validateWorkflow, type WorkflowDraft } from "../../../src/domain/workflow.js";
import { createTenant } from "../../../src/main/admin.js";
import { uuidv7From } from "../../../src/main/ids.js";
import type { ExecutionRef } from "../../../src/ports/execution-store.js";
import type { DueEntry } from "../../../src/ports/hot-tier.js";
import { migratedDatabase, type TestDatabase, testConfig } from "./services.js";

export interface WorkflowDb {
  db: TestDatabase;
  pool: PgPool;
  tenantId: string;
  apiKeyId: string;
  stop(): Promise<void>;
}

export async function startWorkflowDb(): Promise<WorkflowDb> {
  const db = await migratedDatabase();
  const config = testConfig(db.url);
  const created = await createTenant(config, systemClock, `wf-${Date.now()}`, {});
  const pool = createPgPool({
    connectionString: db.url,
    maxConnections: 60,
    statementTimeoutMs: 60_000,
    connectTimeoutMs: 5000,
    role: null,
    applicationName: "workflow-test",
    onError: () => undefined,
  });
  return {
    db,
    pool,
    tenantId: created.tenant.id,
    apiKeyId: created.apiKeyId,
    async stop() {
      await pool.end();
      await db.drop();
    },
  };
}

export interface Submitted {
  draft: WorkflowDraft;
  idOf: Map<string, string>;
  keyOf: Map<string, string>;
}

const newId = uuidv7From(systemClock);

export async function submitWorkflow(
  w: WorkflowDb,
  body: unknown,
  nowMs = Date.now(),
): Promise<Submitted> {
  const draft = validateWorkflow(body, {
    tenantId: w.tenantId,
    nowMs,
    horizonMs: 7 * 86_400_000,
    maxPayloadBytes: 65_536,
    retryDefaults: {},
    newTaskId: newId,
  });
  await new PgWorkflowStore(w.pool).insert(draft, { apiKeyId: w.apiKeyId, requestId: "t" }, nowMs);
  const idOf = new Map(draft.nodes.map((n) => [n.key, n.task.id]));
  const keyOf = new Map(draft.nodes.map((n) => [n.task.id, n.key]));
  return { draft, idOf, keyOf };
}

export type Outcome = "COMPLETED" | "DEAD";

const LEASE_OWNER = "workflow-test";
const LEASE_TTL_MS = 86_400_000;
/** The shard epochs held for arming, per pool (each test file's own database). */
const epochsOf = new WeakMap<PgPool, Map<number, number>>();

async function shardEpoch(pool: PgPool, shard: number): Promise<number> {
  const epochs = epochsOf.get(pool) ?? new Map<number, number>();
  epochsOf.set(pool, epochs);
  const held = epochs.get(shard);
  if (held !== undefined) return held;
  const epoch = await new PgLeaseStore(pool).acquire(
    `shard:${shard}`,
    LEASE_OWNER,
    LEASE_TTL_MS,
    Date.now(),
  );
  if (epoch === null) throw new Error(`shard:${shard} is leased by someone else`);
  epochs.set(shard, epoch);
  return epoch;
}

const storeOptions = { rowLevelSecurity: false, random: () => 0.5, newId: randomUUID };
/** startNode waits at most this long for a node to fall due (a release's delay_ms). */
const NOT_DUE_WAIT_MAX_MS = 10_000;

/** A SCHEDULED task armed by the dispatcher's fenced arm and started by a worker: its attempt's ref. */
export async function startNode(
  w: Pick<WorkflowDb, "pool">,
  taskId: string,
  nowMs = Date.now(),
): Promise<ExecutionRef> {
  const found = await w.pool.query(
    `SELECT tenant_id, hot_shard, (extract(epoch FROM run_at) * 1000)::float8 AS ms
       FROM tasks WHERE id = $1`,
    [taskId],
  );
  const { tenant_id: tenantId, hot_shard: shard } = found.rows[0];
  const runAtMs = Math.round(found.rows[0].ms);
  const fence = { shard, owner: LEASE_OWNER, epoch: await shardEpoch(w.pool, shard) };
  const [arm] = await new PgDispatchStore(w.pool).arm(
    [{ fence, claims: [{ taskId, runAtMs }] }],
    nowMs,
  );
  const token = arm?.armed[0]?.fencingToken;
  if (token === undefined) throw new Error(`task ${taskId} was not armed (not SCHEDULED?)`);
  const ref = { tenantId, taskId, fencingToken: token, runAtMs };
  const store = new PgExecutionStore(w.pool, storeOptions);
  let started = await store.start(ref, "workflow-test-worker", LEASE_TTL_MS, nowMs);
  // A node released with a delay is not due yet by the database's clock: wait, as a worker does.
  if (started.kind === "not_due" && started.dueInMs <= NOT_DUE_WAIT_MAX_MS) {
    const waitMs = started.dueInMs + 5;
    await new Promise((resolve) => setTimeout(resolve, waitMs));
    started = await store.start(ref, "workflow-test-worker", LEASE_TTL_MS, nowMs);
  }
  if (started.kind !== "started") throw new Error(`task ${taskId}: start was ${started.kind}`);
  return ref;
}

export interface FinishOptions {
  result?: unknown;
  nowMs?: number;
  /** Runs just before the completion's COMMIT, on its connection (then `client` is required). */
  beforeCommit?: (client: pg.ClientBase) => Promise<void>;
  /** The attempt, if the test started it already (startNode); else it is armed and started here. */
  started?: ExecutionRef;
}

/** What the fenced completion or failure answered: the nodes it released. */
export interface Finished {
  released: readonly DueEntry[];
}

/**
 * One node's attempt to its end: COMPLETED by the fenced completion, or DEAD
 * by a non-retryable fenced failure; the releaser runs in that transaction.
 * On `client` (a connection of its own, for tests that hold or kill it), or
 * on the pool.
 */
export async function finishTask(
  w: Pick<WorkflowDb, "pool">,
  client: pg.ClientBase | null,
  taskId: string,
  outcome: Outcome,
  options: FinishOptions = {},
): Promise<Finished> {
  const nowMs = options.nowMs ?? Date.now();
  const ref = options.started ?? (await startNode(w, taskId, nowMs));
  const on = client === null ? w.pool : onConnection(client, options.beforeCommit);
  const store = new PgExecutionStore(on, storeOptions);
  if (outcome === "COMPLETED") {
    const done = await store.complete(ref, JSON.stringify(options.result ?? null), nowMs);
    if (done.kind !== "completed") throw new Error(`task ${taskId}: complete was ${done.kind}`);
    return { released: done.released ?? [] };
  }
  const failure = { message: "the test's failure", retryable: false };
  const dead = await store.fail(ref, failure, nowMs);
  if (dead.kind !== "dead") throw new Error(`task ${taskId}: fail was ${dead.kind}`);
  return { released: dead.released ?? [] };
}

/** finishTask on a pooled connection. */
export function finish(
  w: Pick<WorkflowDb, "pool">,
  taskId: string,
  outcome: Outcome,
  options: Omit<FinishOptions, "beforeCommit"> = {},
): Promise<Finished> {
  return finishTask(w, null, taskId, outcome, options);
}

/**
 * A pool for the execution store that hands out one connection of the
 * test's, never releases it, and runs `beforeCommit` before its COMMIT.
 */
function onConnection(
  client: pg.ClientBase,
  beforeCommit?: (client: pg.ClientBase) => Promise<void>,
): PgPool {
  const query = async (text: string, params?: unknown[]) => {
    if (text === "COMMIT" && beforeCommit) await beforeCommit(client);
    return client.query(text, params);
  };
  const connection = { query, release: () => undefined };
  return { connect: async () => connection, query } as unknown as PgPool;
}

/** Each node's task status by key, and the workflow row. */
export async function statesOf(w: Pick<WorkflowDb, "pool">, s: Pick<Submitted, "draft">) {
  const tasks = await w.pool.query(
    "SELECT workflow_node, status FROM tasks WHERE workflow_id = $1",
    [s.draft.id],
  );
  const workflow = await w.pool.query("SELECT * FROM workflows WHERE id = $1", [s.draft.id]);
  return {
    nodes: Object.fromEntries(tasks.rows.map((r) => [r.workflow_node, r.status])) as Record<
      string,
      string
    >,
    workflow: workflow.rows[0],
  };
}

export { pg };
