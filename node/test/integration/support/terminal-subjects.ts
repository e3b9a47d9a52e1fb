/**
 * Rows in a terminal state for terminal-states.test.ts, made the way the
 * system makes rows (submitted through the stores) and then moved to the
 * state with one UPDATE, as if a worker, the releaser or a cancel had ended
 * them. Each is left as tempting as a stale actor could find it: a fencing
 * token a late worker may still hold, an execution lease long expired,
 * armed long ago under an old epoch of its shard, due soon.
 */
import { randomUUID } from "node:crypto";
import { systemClock } from "../../../src/adapters/clock/system-clock.js";
import { PgDispatchStore } from "../../../src/adapters/pg/dispatch-store.js";
import { PgExecutionStore } from "../../../src/adapters/pg/execution-store.js";
import { PgLeaseStore } from "../../../src/adapters/pg/lease-store.js";
import { createPgPool, type PgPool } from "../../../src/adapters/pg/pool.js";
import { PgTaskStore } from "../../../src/adapters/pg/task-store.js";
import { PgWorkflowStore } from "../../../src/adapters/pg/workflow-store.js";
import { validateSubmission } from "../../../src/domain/submission.js";
import { validateWorkflow } from "../../../src/domain/workflow.js";
import { createTenant } from "../../../src/main/admin.js";
import { uuidv7From } from "../../../src/main/ids.js";
import type { ExecutionRef } from "../../../src/ports/execution-store.js";
import { migratedDatabase, type TestDatabase, testConfig } from "./services.js";

export const TERMINAL_STATES = ["COMPLETED", "DEAD", "CANCELLED", "SKIPPED"] as const;
export type TerminalState = (typeof TERMINAL_STATES)[number];

/** A terminal task and what a stale actor would name it by. */
export interface Subject {
  tenantId: string;
  id: string;
  runAtMs: number;
  /** Its current fencing token: what a worker that ran its last attempt holds. */
  token: string;
  shard: number;
  workflowId: string | null;
  /** A workflow subject's parent (SCHEDULED), whose end runs the releaser over the subject. */
  parentId: string | null;
  ref: ExecutionRef;
}

export interface Stores {
  db: TestDatabase;
  pool: PgPool;
  tenantId: string;
  apiKeyId: string;
  tasks: PgTaskStore;
  dispatch: PgDispatchStore;
  leases: PgLeaseStore;
  /** One statement per call (the HTTP worker protocol and the reconciler). */
  executions: PgExecutionStore;
  /** Coalesced starts and completions (START_MANY, COMPLETE_MANY), as the Node worker runs them. */
  coalesced: PgExecutionStore;
  workflows: PgWorkflowStore;
  /** The epoch of `shard:<n>` the test holds, for arms. */
  epochOf: Map<number, number>;
  stop(): Promise<void>;
}

export const LEASE_OWNER = "terminal-test";
const newId = uuidv7From(systemClock);

export async function startStores(): Promise<Stores> {
  const db = await migratedDatabase();
  const created = await createTenant(testConfig(db.url), systemClock, "terminal", {});
  const pool = createPgPool({
    connectionString: db.url,
    maxConnections: 6,
    statementTimeoutMs: 30_000,
    connectTimeoutMs: 5000,
    role: null,
    applicationName: "terminal-states-test",
    onError: () => undefined,
  });
  const options = { rowLevelSecurity: false, random: () => 0.5, newId: randomUUID };
  const leases = new PgLeaseStore(pool);
  const epochOf = new Map<number, number>();
  for (let shard = 0; shard < 16; shard++) {
    const epoch = await leases.acquire(`shard:${shard}`, LEASE_OWNER, 86_400_000, Date.now());
    epochOf.set(shard, epoch!);
  }
  return {
    db,
    pool,
    tenantId: created.tenant.id,
    apiKeyId: created.apiKeyId,
    tasks: new PgTaskStore(pool),
    dispatch: new PgDispatchStore(pool),
    leases,
    executions: new PgExecutionStore(pool, options),
    coalesced: new PgExecutionStore(pool, { ...options, coalesceMax: 64 }),
    workflows: new PgWorkflowStore(pool),
    epochOf,
    async stop() {
      await pool.end();
      await db.drop();
    },
  };
}

/** A standalone task (submitted as the API does), then ended in `state`. */
export async function terminalTask(s: Stores, state: TerminalState): Promise<Subject> {
  const { draft } = validateSubmission({ type: "terminal", delay_ms: 60_000 }, submissionCtx(s));
  await s.tasks.insertMany(
    [{ draft, requestHash: null, apiKeyId: s.apiKeyId, requestId: "terminal" }],
    Date.now(),
  );
  return end(s, draft.id, state, null, null);
}

/** A workflow node with one parent (the parent still SCHEDULED), then ended in `state`. */
export async function terminalNode(s: Stores, state: TerminalState): Promise<Subject> {
  const nowMs = Date.now();
  const draft = validateWorkflow(
    {
      nodes: [
        { key: "parent", type: "terminal" },
        { key: "child", type: "terminal", depends_on: ["parent"], trigger_rule: "all_done" },
      ],
    },
    {
      tenantId: s.tenantId,
      nowMs,
      horizonMs: 7 * 86_400_000,
      maxPayloadBytes: 65_536,
      retryDefaults: {},
      newTaskId: newId,
    },
  );
  await s.workflows.insert(draft, { apiKeyId: s.apiKeyId, requestId: "terminal" }, nowMs);
  const [parent, child] = draft.nodes;
  return end(s, child!.task.id, state, draft.id, parent!.task.id);
}

const submissionCtx = (s: Stores) => ({
  tenantId: s.tenantId,
  nowMs: Date.now(),
  horizonMs: 7 * 86_400_000,
  maxPayloadBytes: 65_536,
  retryDefaults: {},
  newTaskId: newId,
});

async function end(
  s: Stores,
  id: string,
  state: TerminalState,
  workflowId: string | null,
  parentId: string | null,
): Promise<Subject> {
  const ended = await s.pool.query(
    `UPDATE tasks
        SET status = $2, attempt = 1, fencing_token = nextval('fencing_token_seq'),
            lease_owner = 'late-worker', lease_expires_at = now() - interval '1 hour',
            armed_at = now() - interval '2 hours', started_at = now() - interval '2 hours',
            dispatch_shard = hot_shard, dispatch_epoch = 0,
            completed_at = CASE WHEN $2 = 'COMPLETED' THEN now() END,
            dead_at = CASE WHEN $2 = 'DEAD' THEN now() END,
            cancelled_at = CASE WHEN $2 = 'CANCELLED' THEN now() END,
            skipped_at = CASE WHEN $2 = 'SKIPPED' THEN now() END,
            updated_at = now()
      WHERE id = $1
      RETURNING tenant_id, fencing_token::text AS token, hot_shard AS shard,
                (extract(epoch FROM run_at) * 1000)::float8 AS run_at_ms`,
    [id, state],
  );
  const row = ended.rows[0];
  const runAtMs = Math.round(row.run_at_ms);
  return {
    tenantId: row.tenant_id,
    id,
    runAtMs,
    token: row.token,
    shard: row.shard,
    workflowId,
    parentId,
    ref: { tenantId: row.tenant_id, taskId: id, fencingToken: row.token, runAtMs },
  };
}

/** Everything a write to the row would change (xmin too: a rewrite with equal values moves it). */
export async function rowOf(s: Stores, id: string): Promise<Record<string, unknown>> {
  const result = await s.pool.query(
    "SELECT xmin::text AS xmin, to_jsonb(t) AS row FROM tasks t WHERE id = $1",
    [id],
  );
  return result.rows[0];
}

/** Arms and starts a SCHEDULED task through the dispatcher's and the worker's statements. */
export async function armAndStart(s: Stores, taskId: string): Promise<ExecutionRef> {
  const found = await s.pool.query(
    `SELECT tenant_id, hot_shard, (extract(epoch FROM run_at) * 1000)::float8 AS ms
       FROM tasks WHERE id = $1`,
    [taskId],
  );
  const { tenant_id: tenantId, hot_shard: shard } = found.rows[0];
  const runAtMs = Math.round(found.rows[0].ms);
  const fence = { shard, owner: LEASE_OWNER, epoch: s.epochOf.get(shard)! };
  const [armed] = await s.dispatch.arm([{ fence, claims: [{ taskId, runAtMs }] }], Date.now());
  const token = armed?.armed[0]?.fencingToken;
  if (token === undefined) throw new Error(`task ${taskId} was not armed`);
  const ref = { tenantId, taskId, fencingToken: token, runAtMs };
  const started = await s.executions.start(ref, "parent-worker", 60_000, Date.now());
  if (started.kind !== "started") throw new Error(`task ${taskId} did not start`);
  return ref;
}
