/**
 * arm-tasks: the dispatcher's one fenced write per claim batch.
 * $1 lease name, $2 owner, $3 epoch bigint, $4 now_ms float8, $5 shard int,
 * $6 ids uuid[], $7 run_at_ms float8[] (same order), $8 min run_at, $9 max run_at (timestamptz)
 * → always at least one row: `fenced` (1 when the lease held, else 0) and,
 *   for each task armed, its envelope fields (NULLs when none was armed).
 *
 * The fence: the lease row must still be (owner, epoch) and unexpired at
 * now_ms, and is locked FOR SHARE so an acquisition by another node waits
 * for this statement (or this statement for it): a stale dispatcher's update
 * matches nothing. A task is armed if SCHEDULED, or if ARMED under an older
 * epoch of this shard (its previous owner died before publishing it). Each
 * gets a new token from fencing_token_seq. run_at bounds let the planner
 * prune partitions.
 */
export const ARM_TASKS = `
WITH fence AS (
  SELECT 1 FROM leases
   WHERE name = $1 AND owner = $2 AND epoch = $3
     AND expires_at > timestamptz 'epoch' + $4 * interval '1 millisecond'
   FOR SHARE
),
claim AS (
  SELECT c.id, timestamptz 'epoch' + c.run_at_ms * interval '1 millisecond' AS run_at
    FROM unnest($6::uuid[], $7::float8[]) AS c (id, run_at_ms)
),
armed AS (
  UPDATE tasks t
     SET status = 'ARMED',
         fencing_token = nextval('fencing_token_seq'),
         armed_at = timestamptz 'epoch' + $4 * interval '1 millisecond',
         updated_at = timestamptz 'epoch' + $4 * interval '1 millisecond',
         dispatch_shard = $5,
         dispatch_epoch = $3
    FROM claim c
   WHERE EXISTS (SELECT 1 FROM fence)
     AND t.id = c.id AND t.run_at = c.run_at
     AND t.run_at >= $8::timestamptz
     AND t.run_at <= $9::timestamptz
     AND (t.status = 'SCHEDULED'
          OR (t.status = 'ARMED' AND t.dispatch_shard = $5 AND t.dispatch_epoch < $3))
  RETURNING t.id, t.tenant_id, t.type, t.payload::text AS payload_json, t.priority,
            (extract(epoch FROM t.run_at) * 1000)::float8 AS run_at_ms, t.attempt,
            t.fencing_token::text AS fencing_token, t.timeout_ms, t.idempotency_key, t.workflow_id
)
SELECT (SELECT count(*) FROM fence)::int AS fenced, a.*, tn.grace_ms
  FROM (SELECT 1) AS one
  LEFT JOIN armed a ON true
  LEFT JOIN tenants tn ON tn.id = a.tenant_id`;

/**
 * scheduled-before: $1 before timestamptz, $2 after_run_at_ms (or NULL), $3 after_id, $4 limit
 * → SCHEDULED tasks with run_at < before, keyset-paginated by (run_at, id).
 * `before` is a plain parameter so partitions after it are pruned at plan time.
 */
export const SCHEDULED_BEFORE = `
SELECT id, tenant_id, (extract(epoch FROM run_at) * 1000)::float8 AS run_at_ms
  FROM tasks
 WHERE status = 'SCHEDULED'
   AND run_at < $1::timestamptz
   AND ($2::float8 IS NULL
        OR (run_at, id) > (timestamptz 'epoch' + $2 * interval '1 millisecond', $3::uuid))
 ORDER BY run_at, id
 LIMIT $4`;

/**
 * rearm-stale: $1 stale_before timestamptz, $2 now_ms, $3 limit → count of tasks sent
 * back from ARMED to SCHEDULED: armed and due before stale_before (nobody
 * started them within the dispatch timeout). The new fencing token makes any
 * envelope already published for them stale; the next dispatcher arms them
 * again (another new token). Idempotent: a second run finds nothing.
 */
export const REARM_STALE = `
WITH stale AS (
  SELECT id, run_at FROM tasks
   WHERE status = 'ARMED'
     AND armed_at < $1::timestamptz
     AND run_at < $1::timestamptz
   LIMIT $3
   FOR UPDATE SKIP LOCKED
)
UPDATE tasks t
   SET status = 'SCHEDULED',
       fencing_token = nextval('fencing_token_seq'),
       updated_at = timestamptz 'epoch' + $2 * interval '1 millisecond'
  FROM stale s
 WHERE t.id = s.id AND t.run_at = s.run_at AND t.status = 'ARMED'
RETURNING t.id`;
