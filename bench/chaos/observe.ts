/**
 * The chaos run's observer inside its own database: a BEFORE INSERT OR UPDATE
 * trigger on `tasks` that appends every status or fencing-token change to
 * `chaos.transitions` in the changing transaction (so a rolled-back change
 * leaves no row), with the database's clock, the token, the run_at and the
 * error code of the new row version. Chronofence has no history of states
 * (its audit_log records requests), and the checker needs one to judge that
 * terminal states never move back and when each attempt was due.
 *
 * A BEFORE trigger, because a retry that moves a row to a later day's
 * partition is an UPDATE turned into DELETE + INSERT, which fires no AFTER
 * UPDATE trigger; BEFORE UPDATE fires on the source partition either way. It
 * lives only in the chaos database (Postgres 13+ clones it to every partition);
 * no migration of Chronofence knows it.
 *
 * SECURITY DEFINER: the API writes tasks as chronofence_api, which has no
 * rights on the chaos schema (and must not get any).
 *
 * Also here: reading the database into the checker's shapes (history.ts).
 */
import type pg from "pg";
import type { TaskRow, Transition } from "./history.js";

const INSTALL = `
CREATE SCHEMA IF NOT EXISTS chaos;
CREATE TABLE IF NOT EXISTS chaos.transitions (
  seq bigserial PRIMARY KEY,
  task_id uuid NOT NULL,
  from_status text NOT NULL,
  to_status text NOT NULL,
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  fencing_token bigint,
  run_at timestamptz NOT NULL,
  error_code text
);
CREATE OR REPLACE FUNCTION chaos.record_transition() RETURNS trigger LANGUAGE plpgsql
  SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO chaos.transitions (task_id, from_status, to_status, fencing_token, run_at, error_code)
    VALUES (NEW.id, '', NEW.status, NEW.fencing_token, NEW.run_at, NEW.last_error->>'code');
  ELSIF OLD.status IS DISTINCT FROM NEW.status OR OLD.fencing_token IS DISTINCT FROM NEW.fencing_token THEN
    INSERT INTO chaos.transitions (task_id, from_status, to_status, fencing_token, run_at, error_code)
    VALUES (NEW.id, OLD.status, NEW.status, NEW.fencing_token, NEW.run_at, NEW.last_error->>'code');
  END IF;
  RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS chaos_record_transition ON tasks;
CREATE TRIGGER chaos_record_transition BEFORE INSERT OR UPDATE ON tasks
  FOR EACH ROW EXECUTE FUNCTION chaos.record_transition();
`;

export async function installObserver(client: pg.ClientBase): Promise<void> {
  await client.query(INSTALL);
}

const ms = (column: string) => `(extract(epoch FROM ${column}) * 1000)::float8`;

export async function readTransitions(client: pg.ClientBase): Promise<Transition[]> {
  const { rows } = await client.query(
    `SELECT task_id, from_status, to_status, ${ms("at")} AS at_ms, fencing_token::text AS token,
            ${ms("run_at")} AS run_at_ms, error_code
       FROM chaos.transitions ORDER BY seq`,
  );
  return rows.map((r) => ({
    taskId: r.task_id,
    from: r.from_status,
    to: r.to_status,
    atMs: Math.round(r.at_ms),
    fencingToken: r.token,
    runAtMs: Math.round(r.run_at_ms),
    errorCode: r.error_code,
  }));
}

const round = (value: number | null) => (value === null ? null : Math.round(value));

/** Every task row, as the checker reads it. */
export async function readTasks(client: pg.ClientBase): Promise<TaskRow[]> {
  const { rows } = await client.query(
    `SELECT t.id, t.status, ${ms("t.run_at")} AS run_at_ms, t.fencing_token::text AS token,
            t.schedule_id, ${ms("o.scheduled_for")} AS scheduled_for_ms, t.idempotency_key,
            ${ms("t.armed_at")} AS armed_ms, ${ms("t.started_at")} AS started_ms,
            ${ms("coalesce(t.completed_at, t.dead_at, t.cancelled_at, t.skipped_at)")} AS finished_ms,
            t.attempt, t.lease_owner, t.updated_at::text AS updated
       FROM tasks t LEFT JOIN schedule_occurrences o ON o.task_id = t.id
      ORDER BY t.id`,
  );
  return rows.map((r) => ({
    id: r.id,
    status: r.status,
    runAtMs: Math.round(r.run_at_ms),
    fencingToken: r.token,
    scheduleId: r.schedule_id,
    scheduledForMs: round(r.scheduled_for_ms),
    idempotencyKey: r.idempotency_key,
    armedAtMs: round(r.armed_ms),
    startedAtMs: round(r.started_ms),
    finishedAtMs: round(r.finished_ms),
    attempt: r.attempt,
    leaseOwner: r.lease_owner,
    updatedAt: r.updated,
  }));
}
