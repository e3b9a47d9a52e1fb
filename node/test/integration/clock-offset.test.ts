/**
 * CF_CLOCK_OFFSET_MS reaches the roles of `chronofence run`: a reconciler
 * started 10 minutes behind writes its leader lease with its own (skewed)
 * now, as the chaos harness's clock fault relies on (bench/chaos).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { killRolesChildren, startRolesChild } from "./support/roles-child.js";
import {
  migratedDatabase,
  requireRedis,
  TEST_REDIS_URL,
  type TestDatabase,
  withPg,
} from "./support/services.js";
import { waitUntil } from "./support/wait.js";

const OFFSET_MS = -600_000;
const TTL_MS = 6000;
let db: TestDatabase;

beforeAll(async () => {
  await requireRedis();
  db = await migratedDatabase();
});

afterAll(async () => {
  killRolesChildren();
  await db?.drop();
});

it("a node started with CF_CLOCK_OFFSET_MS writes its lease expiry on its skewed clock", async () => {
  const child = await startRolesChild("reconciler", {
    DATABASE_URL: db.url,
    REDIS_URL: TEST_REDIS_URL,
    CF_REDIS_PREFIX: `cf-test-clock-${process.pid}`,
    CF_METRICS_PORT: "0",
    CF_LEASE_TTL_MS: String(TTL_MS),
    CF_LEASE_HEARTBEAT_MS: "300",
    CF_LEASE_SAFETY_MARGIN_MS: "1000",
    CF_CLOCK_OFFSET_MS: String(OFFSET_MS),
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
  });
  const expiresMs = await waitUntil(
    "the leader lease",
    () =>
      withPg(db.url, async (c) => {
        const { rows } = await c.query(
          `SELECT (extract(epoch FROM expires_at) * 1000)::float8 AS ms FROM leases
            WHERE name = 'leader' AND owner = $1`,
          [child.nodeId],
        );
        return rows[0]?.ms as number | undefined;
      }),
    (ms) => ms !== undefined,
    30_000,
  );
  // now + offset + ttl on the node's clock, renewed every 300 ms: within seconds of it.
  const skewedMs = Date.now() + OFFSET_MS + TTL_MS;
  expect(Math.abs(expiresMs! - skewedMs)).toBeLessThan(20_000);
  child.process.kill("SIGTERM");
  await child.exited;
});
