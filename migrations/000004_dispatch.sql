-- 000004: what the dispatcher, pre-loader and reconciler need.
--
-- tasks.dispatch_shard, tasks.dispatch_epoch: the shard and the shard-lease
--   epoch under which the task was last ARMED. A newer epoch of the same
--   shard may take over an ARMED task (its previous owner died before
--   publishing); the same epoch may not arm it twice.
-- tasks_armed_at_idx: the reconciler's search for ARMED tasks nobody started.
-- leases_expires_at_idx: counting live nodes (membership leases `node:<id>`).
--
-- The dispatcher roles connect as the login role (not chronofence_api): they
-- work across tenants, which row-level security would hide from them.

ALTER TABLE tasks ADD COLUMN dispatch_shard smallint;
ALTER TABLE tasks ADD COLUMN dispatch_epoch bigint;

CREATE INDEX tasks_armed_at_idx ON tasks (armed_at) WHERE status = 'ARMED';
CREATE INDEX leases_expires_at_idx ON leases (expires_at);
