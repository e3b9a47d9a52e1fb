/**
 * Tasks written straight to Postgres as a dispatcher leaves them (ARMED,
 * a fresh fencing token) and their envelopes as it publishes them: for
 * worker tests that feed a queue themselves (an early envelope, a flood,
 * a garbled copy) without the dispatch roles.
 */
import { randomUUID } from "node:crypto";
import { envelopeJson } from "../../../src/domain/envelope.js";
import { withPg } from "./services.js";

export interface ArmedRow {
  id: string;
  tenantId: string;
  type: string;
  payloadJson: string;
  token: string;
  runAtMs: number;
  timeoutMs: number;
}

export async function armTasks(
  dbUrl: string,
  count: number,
  task: { tenantId: string; type: string; payload?: unknown; runAtMs?: number; timeoutMs?: number },
): Promise<ArmedRow[]> {
  const payloadJson = JSON.stringify(task.payload ?? {});
  const runAtMs = task.runAtMs ?? Date.now();
  const timeoutMs = task.timeoutMs ?? 30_000;
  const ids = Array.from({ length: count }, () => randomUUID());
  return withPg(dbUrl, async (c) => {
    const { rows } = await c.query(
      `INSERT INTO tasks (id, tenant_id, type, payload, priority, status, run_at, max_attempts,
                          timeout_ms, backoff_strategy, backoff_base_ms, backoff_max_ms,
                          created_at, updated_at, fencing_token, armed_at)
       SELECT id, $2, $3, $4::jsonb, 'standard', 'ARMED', to_timestamp($5 / 1000.0), 3, $6,
              'exponential', 1000, 60000, now(), now(), nextval('fencing_token_seq'), now()
         FROM unnest($1::uuid[]) AS id
       RETURNING id, fencing_token::text AS token`,
      [ids, task.tenantId, task.type, payloadJson, runAtMs, timeoutMs],
    );
    return rows.map((row) => ({
      id: row.id as string,
      tenantId: task.tenantId,
      type: task.type,
      payloadJson,
      token: row.token as string,
      runAtMs,
      timeoutMs,
    }));
  });
}

/** The envelope a dispatcher would publish for `row`. */
export const envelopeOf = (row: ArmedRow, dispatchedAtMs = Date.now()): string =>
  envelopeJson(
    {
      id: row.id,
      tenantId: row.tenantId,
      type: row.type,
      payloadJson: row.payloadJson,
      priority: "standard",
      runAtMs: row.runAtMs,
      attempt: 0,
      fencingToken: row.token,
      timeoutMs: row.timeoutMs,
      idempotencyKey: null,
      workflowId: null,
      graceMs: 0,
    },
    dispatchedAtMs,
  );

export interface TaskRow {
  status: string;
  attempt: number;
  token: string;
  run_at_ms: number;
  lease_ms: number | null;
  last_error: { code?: string; details?: Record<string, unknown> } | null;
}

export const taskRow = (dbUrl: string, id: string): Promise<TaskRow> =>
  withPg(
    dbUrl,
    async (c) =>
      (
        await c.query(
          `SELECT status, attempt, fencing_token::text AS token, last_error,
                  (extract(epoch FROM run_at) * 1000)::float8 AS run_at_ms,
                  (extract(epoch FROM lease_expires_at) * 1000)::float8 AS lease_ms
             FROM tasks WHERE id = $1`,
          [id],
        )
      ).rows[0],
  );
