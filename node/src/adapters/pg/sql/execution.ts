/**
 * The fenced execution statements (contract: ports/execution-store.ts).
 * Times are passed as epoch ms (float8) from the caller's clock.
 *
 * Each statement that names one task comes in two forms: `…(true)` adds
 * `run_at = $k` so the planner touches one partition (the Node worker knows
 * run_at from the envelope); `…(false)` probes every partition's
 * primary key (tenant_id, id, run_at) by its prefix (HTTP workers may not send run_at).
 *
 * Fencing: every write tests `fencing_token = $3 AND status = <expected>`.
 * A concurrent writer of the same row waits for our row lock and then
 * re-evaluates that test against the new row version, so exactly one of two
 * racing writers changes it. If the other moved the row to another partition
 * (a retry to a later day), the waiter fails with SQLSTATE 40001 instead;
 * the adapter runs the statement again, which then answers "stale".
 */
import { sqlEpochMs, sqlTimestamptz } from "../epoch-ms.js";
import { unfinishedByRunAt } from "./unfinished.js";

/** What a failure decision and its dead letter need. */
export const FAILURE_COLUMNS = `
  id, tenant_id, type, payload::text AS payload_json, attempt, max_attempts,
  backoff_strategy, backoff_base_ms, backoff_max_ms, idempotency_key,
  fencing_token::text AS fencing_token, lease_owner, ${sqlEpochMs("run_at")} AS run_at_ms,
  workflow_id`;

/**
 * run_at arrives as a timestamptz parameter (ISO text), not as epoch ms:
 * `timestamptz 'epoch' + ms * interval` is only stable, so the planner would
 * plan the statement over every partition (~400 with the default horizon);
 * a plain timestamptz constant lets it prune to one at plan time.
 */
const runAtTest = (withRunAt: boolean, param: string) =>
  withRunAt ? `AND run_at = ${param}::timestamptz` : "";

/**
 * start: $1 tenant_id, $2 id, $3 fencing_token, $4 worker_id, $5 now_ms,
 * $6 lease_ms, $7 dispatched_ms float8|null (the envelope's dispatched_at,
 * NULL when the worker does not say) [, $8 run_at timestamptz].
 * Locks: the task's row (UPDATE).
 * → 1 row if ARMED with this token and due by the database's clock (now
 * RUNNING), else 0 (START_REFUSAL says why).
 *
 * "Never before run_at" is decided here, by `run_at <= now()`: the
 * database's clock is the one authority every dispatcher and worker shares,
 * so a node whose clock runs ahead (or an HTTP worker that starts what it
 * was not sent) cannot start a task early. now() is the transaction's start,
 * never later than the statement: it errs on the late side.
 */
export const startTask = (withRunAt: boolean) => `
UPDATE tasks
   SET status = 'RUNNING',
       attempt = attempt + 1,
       lease_owner = $4,
       lease_expires_at = ${sqlTimestamptz("($5::float8 + $6::float8)")},
       dispatched_at = ${sqlTimestamptz("$7::float8")},
       started_at = ${sqlTimestamptz("$5")},
       updated_at = ${sqlTimestamptz("$5")}
 WHERE tenant_id = $1 AND id = $2 AND fencing_token = $3::bigint AND status = 'ARMED'
       AND run_at <= now()
       ${runAtTest(withRunAt, "$8")}
RETURNING attempt, max_attempts, timeout_ms, ${sqlEpochMs("run_at")} AS run_at_ms,
          ${sqlEpochMs("lease_expires_at")} AS lease_expires_at_ms`;

/**
 * start-refusal: $1 tenant_id, $2 id, $3 fencing_token. Locks: nothing.
 * Why a start changed 0 rows: no row (not found); ARMED with this token
 * (`armed`: not due yet by the database's clock, `due_in_ms` from its now(),
 * 0 if it became due since); anything else is stale. Probes every
 * partition's primary key by (tenant_id, id), as TASK_STATUS does.
 */
export const START_REFUSAL = `
SELECT status = 'ARMED' AND fencing_token = $3::bigint AS armed,
       greatest(0, ${sqlEpochMs("run_at")} - ${sqlEpochMs("now()")}) AS due_in_ms
  FROM tasks WHERE tenant_id = $1 AND id = $2`;

/**
 * heartbeat: $1 tenant_id, $2 id, $3 fencing_token, $4 worker_id, $5 now_ms,
 * $6 lease_ms [, $7 run_at timestamptz]. Locks: the task's row (UPDATE).
 * → 1 row if RUNNING with this token, else 0.
 */
export const heartbeatTask = (withRunAt: boolean) => `
UPDATE tasks
   SET lease_owner = $4,
       lease_expires_at = ${sqlTimestamptz("($5::float8 + $6::float8)")},
       updated_at = ${sqlTimestamptz("$5")}
 WHERE tenant_id = $1 AND id = $2 AND fencing_token = $3::bigint AND status = 'RUNNING'
       ${runAtTest(withRunAt, "$7")}
RETURNING ${sqlEpochMs("lease_expires_at")} AS lease_expires_at_ms`;

/**
 * complete: $1 tenant_id, $2 id, $3 fencing_token, $4 result jsonb text, $5 now_ms
 * [, $6 run_at timestamptz]. Locks: the task's row (UPDATE).
 * → 1 row (run_at_ms, workflow_id) if RUNNING with this token (now COMPLETED), else 0.
 */
export const completeTask = (withRunAt: boolean) => `
UPDATE tasks
   SET status = 'COMPLETED',
       result = $4::jsonb,
       lease_expires_at = NULL,
       completed_at = ${sqlTimestamptz("$5")},
       updated_at = ${sqlTimestamptz("$5")}
 WHERE tenant_id = $1 AND id = $2 AND fencing_token = $3::bigint AND status = 'RUNNING'
       ${runAtTest(withRunAt, "$6")}
RETURNING ${sqlEpochMs("run_at")} AS run_at_ms, workflow_id`;

/**
 * lock-running: $1 tenant_id, $2 id, $3 fencing_token [, $4 run_at timestamptz].
 * Locks: the task's row, FOR UPDATE, to the end of the transaction (the
 * failure's decision is made in Node, domain/retry.ts).
 * → 1 row of FAILURE_COLUMNS (and last_error, with `withLastError`: a hand
 * back reads since when no worker had a handler) if RUNNING held with this
 * token, else 0.
 */
export const lockRunningTask = (withRunAt: boolean, withLastError = false) => `
SELECT ${FAILURE_COLUMNS}${withLastError ? ", last_error" : ""}
  FROM tasks
 WHERE tenant_id = $1 AND id = $2 AND fencing_token = $3::bigint AND status = 'RUNNING'
       ${runAtTest(withRunAt, "$4")}
   FOR UPDATE`;

/**
 * lock-expired: $1 now_ms, $2 limit.
 * Locks: the rows, FOR UPDATE SKIP LOCKED: rows another transaction holds (a
 * worker committing right now) are skipped, it decides them.
 * → FAILURE_COLUMNS of RUNNING tasks whose execution lease expired before now, read shard
 *   by shard, oldest run_at first (unfinished.ts).
 * `run_at <= now` holds for every RUNNING task (a start needs it) and lets Postgres plan
 * only the partitions up to now instead of the whole horizon's (~400: 60–330 ms per plan);
 * it is written with to_timestamp, which is immutable, so the planner prunes with it (the
 * timestamptz arithmetic of sqlTimestamptz is only stable). A task started
 * under a database clock ahead of $1 is found by a later round, once $1 passes its run_at.
 */
export const LOCK_EXPIRED = `
SELECT expired.*
  FROM ${unfinishedByRunAt({
    columns: FAILURE_COLUMNS,
    where: `run_at <= to_timestamp($1::float8 / 1000) AND status = 'RUNNING'
       AND lease_expires_at < ${sqlTimestamptz("$1")}`,
    limit: "$2",
    lock: true,
  })} AS expired
 LIMIT $2`;

/**
 * One entry of tasks.attempts (migrations/000017_attempt_history.sql) for
 * the attempt a settling UPDATE ends, read from the row before the update
 * (in SET, `t.` is the old row): its token, worker and instants, how it
 * ended, and its error without the details.
 */
const endedAttempt = (outcome: string, endedMs: string, error: string) => `
       attempts = cf_append_attempt(t.attempts, jsonb_build_object(
         'attempt', t.attempt, 'fencing_token', t.fencing_token::text, 'worker_id', t.lease_owner,
         'dispatched_at_ms', ${sqlEpochMs("t.dispatched_at")}, 'started_at_ms', ${sqlEpochMs("t.started_at")},
         'ended_at_ms', ${endedMs}::float8, 'outcome', ${outcome}, 'error', ${error} - 'details')),`;

/**
 * settle-failures: applies decided failures to locked rows, in one statement.
 * $1 ids uuid[], $2 run_at_ms float8[] (current), $3 next_run_at_ms float8[]
 * (NULL: dead), $4 last_error jsonb[] , $5 now_ms, $6 attempt int[] (the
 * row's attempt, or one less for an attempt given back), $7 tenant ids uuid[].
 * Locks: the rows it updates (the caller's transaction holds them already).
 * → the rows changed (id, status). Every settled row gets a new fencing token, so nothing
 * the failed attempt's holder sends afterwards can match. Retried rows may
 * move to a later day's partition (Postgres moves a row whose partition key
 * changes: delete from the old partition, insert into the new one). The
 * ended attempt is appended to tasks.attempts in the same UPDATE.
 */
export const SETTLE_FAILURES = `
WITH decided AS (
  SELECT d.tenant_id, d.id, ${sqlTimestamptz("d.run_at_ms")} AS run_at,
         CASE WHEN d.next_ms IS NULL THEN NULL ELSE ${sqlTimestamptz("d.next_ms")} END AS next_run_at,
         d.last_error, d.attempt
    FROM unnest($1::uuid[], $2::float8[], $3::float8[], $4::jsonb[], $6::int[], $7::uuid[])
         AS d (id, run_at_ms, next_ms, last_error, attempt, tenant_id)
)
UPDATE tasks t
   SET status = CASE WHEN d.next_run_at IS NULL THEN 'DEAD' ELSE 'SCHEDULED' END,
       run_at = coalesce(d.next_run_at, t.run_at),${endedAttempt(
         `CASE WHEN d.next_run_at IS NULL THEN 'dead' WHEN d.attempt < t.attempt THEN 'interrupted'
                ELSE 'retried' END`,
         "$5",
         "d.last_error",
       )}
       fencing_token = nextval('fencing_token_seq'),
       attempt = d.attempt,
       last_error = d.last_error,
       lease_expires_at = NULL,
       failed_at = ${sqlTimestamptz("$5")},
       dead_at = CASE WHEN d.next_run_at IS NULL THEN ${sqlTimestamptz("$5")} ELSE NULL END,
       updated_at = ${sqlTimestamptz("$5")}
  FROM decided d
 WHERE t.tenant_id = d.tenant_id AND t.id = d.id AND t.run_at = d.run_at AND t.status = 'RUNNING'
RETURNING t.id, t.status`;

/**
 * insert-dead-letters: $1 rows jsonb array of {id, tenant_id, task_id, type,
 * payload, attempt, max_attempts, fencing_token, error, reason, worker_id,
 * run_at_ms}, $2 now_ms. Locks: the new rows only. → no rows.
 */
export const INSERT_DEAD_LETTERS = `
INSERT INTO dead_letters (id, tenant_id, task_id, type, payload, attempt, max_attempts,
                          fencing_token, error, reason, worker_id, run_at, dead_at)
SELECT r.id, r.tenant_id, r.task_id, r.type, coalesce(r.payload, 'null'::jsonb), r.attempt,
       r.max_attempts, r.fencing_token, r.error, r.reason, r.worker_id, ${sqlTimestamptz("r.run_at_ms")},
       ${sqlTimestamptz("$2")}
  FROM jsonb_to_recordset($1::jsonb) AS r (id uuid, tenant_id uuid, task_id uuid, type text,
       payload jsonb, attempt integer, max_attempts integer, fencing_token bigint, error jsonb,
       reason text, worker_id text, run_at_ms float8)`;

/**
 * move-idempotency-keys: $1 tenant_ids uuid[], $2 keys text[], $3 run_at_ms float8[]
 * — keeps idempotency_keys.task_run_at equal to the task's run_at after a move.
 * Locks: the key rows it updates. → no rows.
 */
export const MOVE_IDEMPOTENCY_KEYS = `
UPDATE idempotency_keys k
   SET task_run_at = ${sqlTimestamptz("m.run_at_ms")}
  FROM unnest($1::uuid[], $2::text[], $3::float8[]) AS m (tenant_id, idempotency_key, run_at_ms)
 WHERE k.tenant_id = m.tenant_id AND k.idempotency_key = m.idempotency_key`;

/** task-exists: $1 tenant_id, $2 id. Locks: nothing. → the task's status (any partition), for stale vs not_found. */
export const TASK_STATUS = "SELECT status FROM tasks WHERE tenant_id = $1 AND id = $2";

/**
 * lock-task: $1 tenant_id, $2 id. Locks: the task's row, FOR UPDATE (replay).
 * → 0 or 1 row (status, run_at_ms, idempotency_key, workflow_id).
 */
export const LOCK_TASK = `
SELECT status, ${sqlEpochMs("run_at")} AS run_at_ms, idempotency_key, workflow_id
  FROM tasks WHERE tenant_id = $1 AND id = $2 FOR UPDATE`;

/**
 * replay-task: $1 tenant_id, $2 id, $3 run_at_ms (current), $4 now_ms,
 * $5 api_key_id (may be NULL). Locks: the task's row and its open dead
 * letters (UPDATE; the caller holds the task already: LOCK_TASK).
 * → 1 row (id) if DEAD (now SCHEDULED at now with a new token), else 0; its
 *   open dead letters are marked replayed and an audit row is written.
 */
export const REPLAY_TASK = `
WITH replayed AS (
  UPDATE tasks
     SET status = 'SCHEDULED',
         run_at = ${sqlTimestamptz("$4")},
         fencing_token = nextval('fencing_token_seq'),
         lease_owner = NULL,
         lease_expires_at = NULL,
         dead_at = NULL,
         updated_at = ${sqlTimestamptz("$4")}
   WHERE tenant_id = $1 AND id = $2 AND run_at = ${sqlTimestamptz("$3")} AND status = 'DEAD'
  RETURNING id
),
letters AS (
  UPDATE dead_letters SET replayed_at = ${sqlTimestamptz("$4")}
   WHERE tenant_id = $1 AND task_id = $2 AND replayed_at IS NULL
     AND EXISTS (SELECT 1 FROM replayed)
),
audited AS (
  INSERT INTO audit_log (tenant_id, api_key_id, action, task_ids, at)
  SELECT $1, $5::uuid, 'task.replay', ARRAY[id], ${sqlTimestamptz("$4")} FROM replayed
)
SELECT id FROM replayed`;

/**
 * A test of a coalesced statement on the task's row, written so that the
 * planner cannot estimate it (a CASE gets a fixed 0.5). Estimated, such a
 * test made the planner expect few rows in the batch's days, scan them and
 * join each with the whole batch, where one primary-key probe per row is
 * several times cheaper. With a filling partition's statistics behind, a
 * start of 128 rows took 20 ms with 128 rows ARMED and grew with the backlog,
 * against 4 ms probing (as dispatch.ts found for ARM_TASKS). The same
 * follows from `workflow_id IS NULL` in a partition analyzed while it held
 * workflow nodes only, and from `run_at <= now()` in one analyzed while its
 * tasks were all ahead (node/test/integration/partition-statistics.test.ts).
 * The day bounds cannot be hidden so (the planner
 * prunes partitions by them): their estimate needs the partition's
 * statistics, which migrations/000021 sees to. Since the batch's rows come
 * from cf_start_batch and cf_complete_batch, estimated at one row
 * (migrations/000022), that estimate alone keeps the probes in each of those
 * cases; the CASE stays as a second guard.
 */
const unestimated = (test: string) => `CASE WHEN ${test} THEN true ELSE false END`;
const statusIs = (status: "ARMED" | "RUNNING") => unestimated(`t.status = '${status}'`);

/**
 * start-many: one fenced start per row, in one statement (the worker's
 * coalesced starts), each only if due by the database's clock (as startTask).
 * $1 tenant_ids uuid[], $2 ids uuid[], $3 tokens bigint[],
 * $4 run_at_ms float8[], $5 worker_id text, $6 now_ms float8[], $7 lease_ms
 * float8, $8 and $9 the UTC days of the run_at (from, to exclusive; lets the
 * planner prune partitions), $10 dispatched_ms float8[] (the envelopes' dispatched_at,
 * NULL where unknown). Locks: the rows it updates.
 * → one row per task started (id, token, attempt, max_attempts, timeout_ms,
 *   run_at_ms, lease_expires_at_ms). A task named twice is updated once (the
 *   caller answers the second `stale`).
 * `table`: `tasks`, or the one partition that holds every run_at of the batch
 * (the worker's prepared form: execution-batches.ts).
 */
export const startMany = (table: string) => `
UPDATE ${table} t
   SET status = 'RUNNING',
       attempt = t.attempt + 1,
       lease_owner = $5,
       lease_expires_at = ${sqlTimestamptz("(r.now_ms + $7::float8)")},
       dispatched_at = ${sqlTimestamptz("r.dispatched_ms")},
       started_at = ${sqlTimestamptz("r.now_ms")},
       updated_at = ${sqlTimestamptz("r.now_ms")}
  FROM cf_start_batch($1::uuid[], $2::uuid[], $3::bigint[], $4::float8[], $6::float8[], $10::float8[])
       AS r (tenant_id, id, token, run_at_ms, now_ms, dispatched_ms)
 WHERE t.tenant_id = r.tenant_id AND t.id = r.id AND t.fencing_token = r.token
   AND ${statusIs("ARMED")} AND t.run_at = ${sqlTimestamptz("r.run_at_ms")}
   AND t.run_at >= $8::timestamptz AND t.run_at < $9::timestamptz
   AND ${unestimated("t.run_at <= now()")}
RETURNING t.id, t.fencing_token::text AS token, t.attempt, t.max_attempts, t.timeout_ms,
          ${sqlEpochMs("t.run_at")} AS run_at_ms, ${sqlEpochMs("t.lease_expires_at")} AS lease_expires_at_ms`;
export const START_MANY = startMany("tasks");

/**
 * complete-many: one fenced completion per row, in one statement.
 * $1 tenant_ids uuid[], $2 ids uuid[], $3 tokens bigint[], $4 run_at_ms
 * float8[], $5 results text[] (JSON), $6 now_ms float8[], $7 and $8 the UTC
 * days of the run_at (from, to exclusive). Locks: the rows it updates.
 * → one row (id, token, run_at_ms, workflow_id) per task completed.
 * `outsideWorkflows`: only tasks of no workflow, which need no release in the
 * same transaction, so the statement may run on its own (autocommit).
 * `table`: as startMany's.
 */
export const completeMany = (table: string, outsideWorkflows: boolean) => `
UPDATE ${table} t
   SET status = 'COMPLETED',
       result = r.result::jsonb,
       lease_expires_at = NULL,
       completed_at = ${sqlTimestamptz("r.now_ms")},
       updated_at = ${sqlTimestamptz("r.now_ms")}
  FROM cf_complete_batch($1::uuid[], $2::uuid[], $3::bigint[], $4::float8[], $5::text[], $6::float8[])
       AS r (tenant_id, id, token, run_at_ms, result, now_ms)
 WHERE t.tenant_id = r.tenant_id AND t.id = r.id AND t.fencing_token = r.token
   AND ${statusIs("RUNNING")} AND t.run_at = ${sqlTimestamptz("r.run_at_ms")}
   AND t.run_at >= $7::timestamptz AND t.run_at < $8::timestamptz${outsideWorkflows ? `\n   AND ${unestimated("t.workflow_id IS NULL")}` : ""}
RETURNING t.id, t.fencing_token::text AS token, ${sqlEpochMs("t.run_at")} AS run_at_ms, t.workflow_id`;
export const COMPLETE_MANY = completeMany("tasks", false);
export const COMPLETE_MANY_OUTSIDE_WORKFLOWS = completeMany("tasks", true);

/** The statement with each parameter $n renamed $(n + by): a part of a larger statement. */
const shiftParams = (sql: string, by: number) =>
  sql.replace(/\$([0-9]+)/g, (_, n: string) => `$${Number(n) + by}`);

/**
 * step-many: a worker's coalesced starts and completions (of tasks of no
 * workflow) of one turn, in one statement: one round trip, one execution
 * start and one commit where two statements took two of each (at low rates
 * each carries a task or two, and its fixed cost is most of what a task
 * costs Postgres: bench/RESULTS.md, session 22). $1–$10 as start-many's,
 * $11–$18 as complete-many's $1–$8. The two parts touch different rows: a
 * task is completed only after its start answered. Locks: the rows it updates.
 * → per task started, start-many's row with `started` true; per task
 *   completed, (id, token, run_at_ms, workflow_id) with `started` false.
 */
export const stepMany = (table: string) => `
WITH started AS (${startMany(table)}),
completed AS (${shiftParams(completeMany(table, true), 10)})
SELECT true AS started, id, token, attempt, max_attempts, timeout_ms, run_at_ms,
       lease_expires_at_ms, NULL::uuid AS workflow_id
  FROM started
UNION ALL
SELECT false, id, token, NULL, NULL, NULL, run_at_ms, NULL, workflow_id FROM completed`;
export const STEP_MANY = stepMany("tasks");

/**
 * cancel-failed: $1 ids uuid[], $2 run_at_ms float8[] (current), $3 last_error
 * jsonb[], $4 now_ms, $5 tenant ids uuid[] — RUNNING tasks locked by this transaction whose
 * workflow already failed (fail_fast) or was cancelled: CANCELLED with a new
 * fencing token instead of being retried (the attempt appended to tasks.attempts).
 * Locks: the rows it updates (the caller's transaction holds them already). → no rows.
 */
export const CANCEL_FAILED = `
UPDATE tasks t
   SET status = 'CANCELLED',${endedAttempt("'cancelled'", "$4", "d.last_error")}
       fencing_token = nextval('fencing_token_seq'),
       last_error = d.last_error,
       lease_expires_at = NULL,
       failed_at = ${sqlTimestamptz("$4")},
       cancelled_at = ${sqlTimestamptz("$4")},
       updated_at = ${sqlTimestamptz("$4")}
  FROM unnest($1::uuid[], $2::float8[], $3::jsonb[], $5::uuid[]) AS d (id, run_at_ms, last_error, tenant_id)
 WHERE t.tenant_id = d.tenant_id AND t.id = d.id AND t.run_at = ${sqlTimestamptz("d.run_at_ms")}
   AND t.status = 'RUNNING'`;

/**
 * lock-workflows: $1 ids uuid[] (sorted).
 * Locks: each workflow's row, FOR UPDATE, in id order (two transactions that
 * each end tasks of several workflows take them in the same order).
 * → one row per workflow (id, stopped: a retry of one of its nodes must not run).
 */
export const LOCK_WORKFLOWS = `
SELECT id, status <> 'RUNNING' OR (fail_fast AND dead_nodes > 0) AS stopped
  FROM workflows WHERE id = ANY ($1::uuid[]) ORDER BY id FOR UPDATE`;
