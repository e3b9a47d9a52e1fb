-- 000017: every attempt of a task, kept in its own row (docs/dashboard.md, "Attempts").
--
-- tasks.attempts: a JSON array, one entry per attempt that ended without
--   completing, oldest first: {attempt, fencing_token, worker_id,
--   dispatched_at_ms, started_at_ms, ended_at_ms, outcome, error}, with
--   outcome "retried", "dead", "interrupted" or "cancelled" and error the
--   task's last_error of that attempt without its `details` (the last
--   failure's details stay in last_error and in its dead letter). The attempt
--   running or completed now is the row itself (fencing_token, lease_owner,
--   started_at, completed_at, result), so a success costs nothing here.
--   NULL for a task that never failed, and for attempts that ended before
--   this migration.
--
-- Cost: no new row, index or statement. The entry is appended by the UPDATE
--   that settles a failure already (SETTLE_FAILURES, CANCEL_FAILED in
--   node/src/adapters/pg/sql/execution.ts), which rewrites the row anyway:
--   a few hundred bytes more per failed attempt. At most 100 entries are kept
--   (max_attempts is at most 100; only replays go further), the oldest first
--   to go, so a row holds at most ~100 × (4 KiB message + ~300 B).
--
-- ADD COLUMN without a default changes only the catalog: no rewrite of the
--   partitions, a brief ACCESS EXCLUSIVE lock on tasks.

ALTER TABLE tasks ADD COLUMN attempts jsonb;

-- history with entry appended, keeping the latest 100 entries.
CREATE FUNCTION cf_append_attempt(history jsonb, entry jsonb) RETURNS jsonb
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$
    SELECT CASE WHEN jsonb_array_length(coalesce(history, '[]'::jsonb)) >= 100
                THEN history - 0
                ELSE coalesce(history, '[]'::jsonb) END || jsonb_build_array(entry)
  $$;
