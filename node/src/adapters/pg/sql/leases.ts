/**
 * The lease statements (migrations/000001 `leases`; the roles' privileges: 000011). Times are the caller's
 * clock as epoch ms ($now_ms float8), never the server's now(), so a fake
 * clock drives the protocol and every node judges expiry by the time it sent.
 */
import { sqlEpochMs, sqlTimestamptz } from "../epoch-ms.js";

/**
 * acquire-lease: $1 name, $2 owner, $3 ttl_ms, $4 now_ms.
 * Locks: the lease row (INSERT … ON CONFLICT DO UPDATE).
 * → 1 row (epoch) when acquired, 0 rows when a live lease (anyone's, mine
 *   included) exists. Every acquisition increments the epoch: it is the
 *   fencing token of the authority.
 */
export const ACQUIRE_LEASE = `
INSERT INTO leases AS l (name, owner, epoch, expires_at)
VALUES ($1, $2, 1, ${sqlTimestamptz("($4::float8 + $3::float8)")})
ON CONFLICT (name) DO UPDATE
   SET owner = EXCLUDED.owner, epoch = l.epoch + 1, expires_at = EXCLUDED.expires_at
 WHERE l.expires_at <= ${sqlTimestamptz("$4::float8")}
RETURNING epoch::float8 AS epoch`;

/**
 * acquire-leases: $1 names text[], $2 owner, $3 ttl_ms, $4 now_ms.
 * Locks: the lease rows, in sorted name order, so two nodes acquiring
 * overlapping sets cannot deadlock.
 * → (name, epoch) of each one acquired, as acquire-lease does for one: a
 *   heartbeat takes all the shards it wants in one round trip.
 */
export const ACQUIRE_LEASES = `
INSERT INTO leases AS l (name, owner, epoch, expires_at)
SELECT n.name, $2, 1, ${sqlTimestamptz("($4::float8 + $3::float8)")}
  FROM (SELECT DISTINCT unnest($1::text[]) AS name ORDER BY 1) AS n
ON CONFLICT (name) DO UPDATE
   SET owner = EXCLUDED.owner, epoch = l.epoch + 1, expires_at = EXCLUDED.expires_at
 WHERE l.expires_at <= ${sqlTimestamptz("$4::float8")}
RETURNING name, epoch::float8 AS epoch`;

/**
 * renew-leases: $1 owner, $2 names text[], $3 epochs bigint[], $4 ttl_ms, $5 now_ms.
 * Locks: the rows it updates.
 * → the names renewed: those still held by owner, at that epoch, unexpired.
 */
export const RENEW_LEASES = `
UPDATE leases l SET expires_at = ${sqlTimestamptz("($5::float8 + $4::float8)")}
  FROM unnest($2::text[], $3::bigint[]) AS h(name, epoch)
 WHERE l.name = h.name AND l.owner = $1 AND l.epoch = h.epoch
   AND l.expires_at > ${sqlTimestamptz("$5::float8")}
RETURNING l.name`;

/**
 * release-leases: $1 owner, $2 names text[], $3 epochs bigint[].
 * Locks: the rows it updates.
 * → the names released. Expiry moves to the epoch (1970), so anyone may acquire at once.
 */
export const RELEASE_LEASES = `
UPDATE leases l SET expires_at = timestamptz 'epoch'
  FROM unnest($2::text[], $3::bigint[]) AS h(name, epoch)
 WHERE l.name = h.name AND l.owner = $1 AND l.epoch = h.epoch
RETURNING l.name`;

/**
 * delete-expired-members: $1 names text[], $2 now_ms. Locks: the rows it deletes.
 * → the membership leases (`node:...`) among them that had expired, deleted:
 *   nodes that stopped without releasing would otherwise leave a row each
 *   forever. Only membership rows: a shard or leader row keeps its epoch (the
 *   fencing token) for good. One that renewed or was re-acquired meanwhile is
 *   unexpired and stays. cf_delete_expired_members (SECURITY DEFINER,
 *   migrations/000011_role_privileges.sql): the roles may not DELETE leases themselves.
 */
export const DELETE_EXPIRED_MEMBERS = `
SELECT name FROM cf_delete_expired_members($1::text[], ${sqlTimestamptz("$2::float8")}) AS name`;

/**
 * list-leases: $1 prefixes text[]. Locks: nothing.
 * → every lease whose name starts with one of them (name, owner, epoch, expires_at_ms).
 */
export const LIST_LEASES = `
SELECT name, owner, epoch::float8 AS epoch,
       ${sqlEpochMs("expires_at")} AS expires_at_ms
  FROM leases
 WHERE name LIKE ANY (SELECT p || '%' FROM unnest($1::text[]) AS p)`;
