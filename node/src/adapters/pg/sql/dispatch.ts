/**
 * The dispatcher's statements (PgDispatchStore), as chronofence_dispatch across
 * tenants: the fenced arm, the pre-loader's sweep, the re-arm of stale tasks,
 * the burial of tasks whose envelope can never be published.
 */
import { sqlEpochMs, sqlTimestamptz } from "../epoch-ms.js";
import { unfinishedByRunAt } from "./unfinished.js";

/**
 * arm-tasks: the dispatcher's one fenced write per claim round, for every
 * shard it claimed from.
 * $1 shards int[], $2 lease names text[], $3 owners text[], $4 epochs bigint[] (one per fence),
 * $5 now_ms float8, $6 ids uuid[], $7 run_at_ms float8[], $8 claim shards int[] (one per claim),
 * $9 min run_at, $10 max run_at (timestamptz)
 * Locks: each fence's lease row FOR SHARE, and the task rows it arms.
 * → always at least one row: `fenced_shards` (the shards whose lease held, as
 *   the text of an int[]: the same in every row, so read once) and,
 *   for each task armed, its envelope fields and shard (NULLs when none was armed).
 *
 * The fence, per shard: the lease row must still be (owner, epoch) and
 * unexpired at now_ms, and is locked FOR SHARE so an acquisition by another
 * node waits for this statement (or this statement for it): a stale shard's
 * claims join no fence row and arm nothing, while the other shards' claims
 * in the same statement still arm. A task is armed if SCHEDULED, or if ARMED
 * under an older epoch of its shard (its previous owner died before
 * publishing it). Each gets a new token from fencing_token_seq.
 *
 * Plan: run_at bounds let the planner prune partitions at plan time; each
 * claim is then one probe of tasks_unfinished_shard_run_at_idx (hot_shard,
 * run_at, id): a claim names its shard, not its tenant, which leads the
 * primary key (migrations/000024), and what can be armed is unfinished.
 * `claim` is MATERIALIZED so that the probe can only be a claim's: inlined,
 * the claim's shard equals the fence's, and the planner could read the
 * index by the fence's shard and the run_at bounds alone, a path it
 * estimated at one row as cheap as the probe and preferred for needing
 * fewer outer rows. Run once per claim, that read every unfinished task of
 * the shard between the batch's first and last run_at: with a backlog a few
 * seconds long, 1–3 s per claim round and most of Postgres' CPU
 * (bench/RESULTS.md, session 32; node/test/integration/arm-plan.test.ts). The status test
 * is a CASE so that the planner cannot estimate it: with the statistics of a
 * filling partition lagging behind "now", the planner took the run_at range
 * as empty and OR-ed it with every ARMED row of the day (then through
 * tasks_armed_at_idx, dropped by migrations/000020), then joined that once
 * per claim, so the cost grew with the backlog (EXPLAIN ANALYZE in
 * bench/RESULTS.md, Dispatch).
 *
 * `table`: `tasks`, or the one partition that holds every claim's run_at
 * (the dispatcher's prepared form, day-partition.ts: planned once per
 * connection, where through `tasks` each claim round was planned again).
 */
export const armTasks = (table: string) => `
WITH fence AS (
  SELECT f.shard, f.epoch
    FROM unnest($1::int[], $2::text[], $3::text[], $4::bigint[]) AS f (shard, name, owner, epoch)
    JOIN leases l ON l.name = f.name
   WHERE l.owner = f.owner AND l.epoch = f.epoch
     AND l.expires_at > ${sqlTimestamptz("$5")}
     FOR SHARE OF l
),
claim AS MATERIALIZED (
  SELECT c.id, ${sqlTimestamptz("c.run_at_ms")} AS run_at,
         f.shard, f.epoch
    FROM unnest($6::uuid[], $7::float8[], $8::int[]) AS c (id, run_at_ms, shard)
    JOIN fence f ON f.shard = c.shard
),
armed AS (
  UPDATE ${table} t
     SET status = 'ARMED',
         fencing_token = nextval('fencing_token_seq'),
         armed_at = ${sqlTimestamptz("$5")},
         updated_at = ${sqlTimestamptz("$5")},
         dispatch_shard = c.shard,
         dispatch_epoch = c.epoch
    FROM claim c
   WHERE t.unfinished AND t.hot_shard = c.shard AND t.run_at = c.run_at AND t.id = c.id
     AND t.run_at >= $9::timestamptz
     AND t.run_at <= $10::timestamptz
     AND CASE t.status
           WHEN 'SCHEDULED' THEN true
           WHEN 'ARMED' THEN t.dispatch_shard = c.shard AND t.dispatch_epoch < c.epoch
           ELSE false
         END
  RETURNING c.shard, t.id, t.tenant_id, t.type, t.payload::text AS payload_json, t.priority,
            ${sqlEpochMs("t.run_at")} AS run_at_ms, t.attempt,
            t.fencing_token::text AS fencing_token, t.timeout_ms, t.idempotency_key, t.workflow_id
)
SELECT ARRAY(SELECT shard FROM fence)::text AS fenced_shards, a.*, tn.grace_ms
  FROM (SELECT 1) AS one
  LEFT JOIN armed a ON true
  LEFT JOIN tenants tn ON tn.id = a.tenant_id`;
export const ARM_TASKS = armTasks("tasks");

/**
 * scheduled-before: $1 before timestamptz, $2 shards int[], and per shard its cursor:
 * $3 after_run_at_ms float8[], $4 after_id uuid[] (NULLs: from the start); $5 limit per shard.
 * Locks: nothing.
 * → per shard, the next (at most `limit`) SCHEDULED tasks with run_at < before after its
 *   cursor, in (run_at, id) order, with the shard.
 *
 * Plan: per shard, one range scan of tasks_unfinished_shard_run_at_idx
 * (hot_shard, run_at, id) that stops at the limit, with the state tested on
 * the row (in the window, all but the few in flight are SCHEDULED); the
 * partitions are read in run_at order (an ordered Append, no sort).
 * `before` is a plain parameter so the partitions after it are pruned at
 * plan time. The cursor is coalesced to
 * (-infinity, nil uuid) rather than OR-ed with IS NULL, which keeps it an
 * index condition.
 */
export const SCHEDULED_BEFORE = `
SELECT t.hot_shard AS shard, t.id, t.tenant_id,
       ${sqlEpochMs("t.run_at")} AS run_at_ms
  FROM unnest($2::int[], $3::float8[], $4::uuid[]) AS c (shard, after_run_at_ms, after_id)
 CROSS JOIN LATERAL (
   SELECT s.hot_shard, s.id, s.tenant_id, s.run_at
     FROM tasks s
    WHERE s.unfinished AND s.status = 'SCHEDULED'
      AND s.hot_shard = c.shard
      AND s.run_at < $1::timestamptz
      AND (s.run_at, s.id) >
          (coalesce(${sqlTimestamptz("c.after_run_at_ms")},
                    timestamptz '-infinity'),
           coalesce(c.after_id, '00000000-0000-0000-0000-000000000000'::uuid))
    ORDER BY s.run_at, s.id
    LIMIT $5
 ) t`;

/**
 * rearm-stale: $1 stale_before timestamptz, $2 now_ms float8, $3 limit,
 * $4 max_wait_ms float8.
 * Locks: the stale rows, FOR UPDATE SKIP LOCKED (a row a worker is starting
 * right now is left to it). The UPDATE repeats `run_at < $1` (implied by the
 * join) so that Postgres plans only the partitions before $1: without it the
 * plan covered every partition of the horizon (~400), 118 ms warm. The stale
 * rows are read shard by shard, oldest run_at first (unfinished.ts).
 * → one row (id) per task sent back from ARMED to SCHEDULED: armed and due
 *   before stale_before (nobody started them within the dispatch timeout),
 *   and armed longer ago than it was late when armed (at most max_wait_ms).
 * The new fencing token makes any envelope already published for them stale;
 * the next dispatcher arms them again (another new token). Idempotent: a
 * second run finds nothing.
 *
 * Why the back-off: a task re-armed because its queue is behind gets a new
 * envelope behind its old one. Were it re-armed every timeout, a backlog
 * longer than the timeout would never drain — every envelope a worker reached
 * would be stale by then (a metastable collapse, docs/evidence.md F1). A task
 * armed L late waits max(timeout, L) before its next re-arm: the waits double.
 */
export const REARM_STALE = `
WITH stale AS (
  SELECT s.tenant_id, s.id, s.run_at
    FROM ${unfinishedByRunAt({
      columns: "tenant_id, id, run_at",
      where: `run_at < $1::timestamptz AND status = 'ARMED'
       AND armed_at < $1::timestamptz
       AND armed_at < ${sqlTimestamptz("$2")}
                      - LEAST(GREATEST(armed_at - run_at, interval '0'),
                              $4::float8 * interval '1 millisecond')`,
      limit: "$3",
      lock: true,
    })} AS s
   LIMIT $3
)
UPDATE tasks t
   SET status = 'SCHEDULED',
       fencing_token = nextval('fencing_token_seq'),
       updated_at = ${sqlTimestamptz("$2")}
  FROM stale s
 WHERE t.tenant_id = s.tenant_id AND t.id = s.id AND t.run_at = s.run_at AND t.status = 'ARMED'
   AND t.run_at < $1::timestamptz
RETURNING t.id`;

/**
 * bury-undeliverable: ARMED tasks whose envelope the broker can never accept
 * become DEAD, each with a dead letter (reason `undeliverable`).
 * $1 ids uuid[], $2 run_at_ms float8[], $3 tokens bigint[] (the arm's), $4 dead letter ids
 * uuid[], $5 failure jsonb ({message, code, retryable}), $6 now_ms, $7 now as RFC 3339 text,
 * $8 min run_at, $9 max run_at (timestamptz), $10 tenant ids uuid[]. Locks: the task rows it updates (the caller
 * holds their workflows' rows already: lock order of migrations/000007).
 * → one row (id, run_at_ms, workflow_id) per task buried: only those still ARMED with that
 *   token (a task re-armed, cancelled or started since is left alone). New fencing tokens.
 */
export const BURY_UNDELIVERABLE = `
WITH d AS (
  SELECT * FROM unnest($1::uuid[], $2::float8[], $3::bigint[], $4::uuid[], $10::uuid[])
           AS d (id, run_at_ms, token, letter_id, tenant_id)
),
buried AS (
  UPDATE tasks t
     SET status = 'DEAD',
         fencing_token = nextval('fencing_token_seq'),
         last_error = $5::jsonb || jsonb_build_object('details', NULL, 'attempt', t.attempt,
                        'fencing_token', d.token::text, 'worker_id', NULL, 'at', $7::text),
         failed_at = ${sqlTimestamptz("$6")},
         dead_at = ${sqlTimestamptz("$6")},
         updated_at = ${sqlTimestamptz("$6")}
    FROM d
   WHERE t.tenant_id = d.tenant_id AND t.id = d.id AND t.run_at = ${sqlTimestamptz("d.run_at_ms")}
     AND t.fencing_token = d.token
     AND t.status = 'ARMED' AND t.run_at >= $8::timestamptz AND t.run_at <= $9::timestamptz
  RETURNING t.id, t.tenant_id, t.type, t.payload, t.attempt, t.max_attempts, d.token, t.run_at,
            t.workflow_id, d.letter_id, t.last_error
),
letters AS (
  INSERT INTO dead_letters (id, tenant_id, task_id, type, payload, attempt, max_attempts,
                            fencing_token, error, reason, worker_id, run_at, dead_at)
  SELECT b.letter_id, b.tenant_id, b.id, b.type, b.payload, b.attempt, b.max_attempts, b.token,
         b.last_error, 'undeliverable', NULL, b.run_at, ${sqlTimestamptz("$6")}
    FROM buried b
)
SELECT b.id, ${sqlEpochMs("b.run_at")} AS run_at_ms, b.workflow_id FROM buried b`;
