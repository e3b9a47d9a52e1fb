/**
 * Driving workflows straight in Postgres, for tests of the releaser before
 * workers exist: a "worker" here is a transaction that moves a task to
 * COMPLETED or DEAD with SQL and calls releaseDependents before COMMIT,
 * exactly as the execution store's fenced completion does.
 */
import pg from "pg";
import { systemClock } from "../../../src/adapters/clock/system-clock.js";
import { createPgPool, type PgPool } from "../../../src/adapters/pg/pool.js";
import {
  type ReleaseOutcome,
  releaseDependents,
} from "../../../src/adapters/pg/workflow-release.js";
import { PgWorkflowStore } from "../../../src/adapters/pg/workflow-store.js";
import { validateWorkflow, type WorkflowDraft } from "../../../src/domain/workflow.js";
import { createTenant } from "../../../src/main/admin.js";
import { uuidv7From } from "../../../src/main/ids.js";
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

/**
 * One terminal transition and its release in one transaction, on `client`
 * (a connection of its own when the test runs several at once). `beforeCommit`
 * lets a test hold the transaction open.
 */
export async function finishTask(
  client: pg.ClientBase,
  taskId: string,
  outcome: Outcome,
  options: { result?: unknown; nowMs?: number; beforeCommit?: () => Promise<void> } = {},
): Promise<ReleaseOutcome> {
  const nowMs = options.nowMs ?? Date.now();
  // Found before the transaction, as a worker knows it from its envelope:
  // inside, every statement names the partition (see the lock test).
  const found = await client.query(
    "SELECT (extract(epoch FROM run_at) * 1000)::float8 AS ms FROM tasks WHERE id = $1",
    [taskId],
  );
  const runAtMs = Math.round(found.rows[0].ms);
  await client.query("BEGIN");
  try {
    const moved = await client.query(
      `UPDATE tasks SET status = $3, result = $4::jsonb,
              completed_at = CASE WHEN $3 = 'COMPLETED' THEN now() END,
              dead_at = CASE WHEN $3 = 'DEAD' THEN now() END, updated_at = now()
        WHERE id = $1 AND run_at = $2 AND status IN ('SCHEDULED', 'ARMED', 'RUNNING')`,
      [taskId, new Date(runAtMs).toISOString(), outcome, JSON.stringify(options.result ?? null)],
    );
    if (moved.rowCount !== 1) throw new Error(`task ${taskId} was not pending`);
    const released = await releaseDependents(client, { taskId, runAtMs }, nowMs);
    await options.beforeCommit?.();
    await client.query("COMMIT");
    return released;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}

/** finishTask on a pooled connection. */
export async function finish(
  w: Pick<WorkflowDb, "pool">,
  taskId: string,
  outcome: Outcome,
  options: Parameters<typeof finishTask>[3] = {},
): Promise<ReleaseOutcome> {
  const client = await w.pool.connect();
  try {
    return await finishTask(client, taskId, outcome, options);
  } finally {
    client.release();
  }
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
