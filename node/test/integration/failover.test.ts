/**
 * Shard leases under real process failures: dispatchers run as child
 * processes (`chronofence run --roles dispatcher`); one is paused (SIGSTOP)
 * past its lease, or killed (SIGKILL). Every task is still published once
 * due, none early, and a resumed stale dispatcher publishes nothing for the
 * shards it lost; the arm it had in flight when paused (claimed under a valid
 * lease, UPDATE not yet sent) changes 0 rows once it is sent, and is counted.
 */
import { readFile } from "node:fs/promises";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Config } from "../../src/config/config.js";
import {
  type ApiFixture,
  call,
  startApiFixture,
  type TestApi,
  type TestTenant,
} from "./support/api.js";
import { bundleChild } from "./support/child.js";
import { newTopicPrefix, requireKafka, TestConsumer } from "./support/kafka.js";
import { killRolesChildren, startRolesChild } from "./support/roles-child.js";
import { TEST_REDIS_URL, type TestDatabase, withPg } from "./support/services.js";
import { waitUntil } from "./support/wait.js";

const LEASE_TTL_MS = 1500;
const HEARTBEAT_MS = 250;

let fixture: ApiFixture;
let db: TestDatabase;
let config: Config;
let api: TestApi;
let consumer: TestConsumer;
let tenant: TestTenant;
let dispatchChild: Awaited<ReturnType<typeof bundleChild>>;

beforeAll(async () => {
  await requireKafka();
  dispatchChild = await bundleChild("dispatch-child");
  fixture = await startApiFixture({ topicPrefix: newTopicPrefix("failover") });
  ({ db, config, api, tenant } = fixture);
  consumer = new TestConsumer(config.topicPrefix);
  await consumer.start();
});

afterEach(() => killRolesChildren());

afterAll(async () => {
  killRolesChildren();
  await consumer?.stop();
  await fixture?.stop();
  await dispatchChild?.cleanup();
});

const dispatcherEnv = () => ({
  DATABASE_URL: db.url,
  REDIS_URL: TEST_REDIS_URL,
  CF_REDIS_PREFIX: config.redisKeyPrefix,
  CF_TOPIC_PREFIX: config.topicPrefix,
  CF_KAFKA_PARTITIONS: "2",
  CF_METRICS_PORT: "0",
  HOST: "127.0.0.1",
  CF_HORIZON_DAYS: "7",
  CF_RETENTION_DAYS: "2",
  CF_LEASE_TTL_MS: String(LEASE_TTL_MS),
  CF_LEASE_HEARTBEAT_MS: String(HEARTBEAT_MS),
  CF_LEASE_SAFETY_MARGIN_MS: "400",
  CF_CLAIM_INTERVAL_MS: "50",
  CF_CLAIM_LOOKAHEAD_MS: "1000",
  CF_DISPATCH_DRAIN_MS: "1500",
  LOG_LEVEL: process.env.CF_TEST_LOG_LEVEL ?? "silent",
});

const dispatcher = () => startRolesChild("dispatcher", dispatcherEnv());

/** A dispatcher that, after SIGUSR2, stops itself with its next arm in flight (support/dispatch-child.ts). */
const trappedDispatcher = () =>
  startRolesChild("dispatcher", dispatcherEnv(), { script: dispatchChild.file });

/** The state letter of /proc/<pid>/stat: "T" once stopped. */
async function processState(pid: number): Promise<string> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  return stat.charAt(stat.lastIndexOf(")") + 2);
}

interface ArmLine {
  shard: number;
  epoch: number;
  ids: string[];
  fenced?: boolean;
  armed?: number;
}

const armLines = (match: RegExpExecArray): ArmLine[] => JSON.parse(match[1]!);

/** What any write to these rows would change, xmin first (a rewrite with equal values changes it too). */
const rowsOf = (ids: readonly string[]) =>
  withPg(
    db.url,
    async (c) =>
      (
        await c.query(
          `SELECT id, xmin::text AS xmin, status, fencing_token::text AS token,
                  dispatch_epoch::int AS epoch FROM tasks WHERE id = ANY($1::uuid[]) ORDER BY id`,
          [ids],
        )
      ).rows,
  );

/** Live shard leases by owner. */
const shardOwners = () =>
  withPg(db.url, async (c) => {
    const rows = (
      await c.query(
        "SELECT owner, count(*)::int AS n FROM leases WHERE name LIKE 'shard:%' AND expires_at > now() GROUP BY owner",
      )
    ).rows as Array<{ owner: string; n: number }>;
    return Object.fromEntries(rows.map((r) => [r.owner, r.n])) as Record<string, number>;
  });

async function submitSpread(count: number, firstDelayMs: number, stepMs: number, type: string) {
  const tasks: Array<{ id: string; runAtMs: number }> = [];
  for (let i = 0; i < count; i++) {
    const answer = await call(api.baseUrl, "POST", "/v1/tasks", {
      key: tenant.apiKey,
      body: { type, delay_ms: firstDelayMs + i * stepMs },
    });
    expect(answer.status).toBe(201);
    tasks.push({ id: answer.body.id, runAtMs: Date.parse(answer.body.run_at) });
  }
  return tasks;
}

function expectAllPublishedNoneEarly(tasks: Array<{ id: string; runAtMs: number }>) {
  for (const task of tasks) {
    const messages = consumer.ofTask(task.id);
    expect(messages.length, `task ${task.id} published`).toBeGreaterThanOrEqual(1);
    for (const m of messages) {
      expect(m.arrivedAtMs).toBeGreaterThanOrEqual(task.runAtMs);
      expect(Date.parse(m.envelope.dispatched_at)).toBeGreaterThanOrEqual(task.runAtMs);
    }
  }
}

const allPublished = (tasks: Array<{ id: string }>) => () => {
  const published = consumer.publishedIds();
  return tasks.every((t) => published.has(t.id));
};

describe("a paused dispatcher (SIGSTOP past its lease, then SIGCONT)", () => {
  it("publishes nothing for the shards it lost, nothing it armed survives under its old epoch, and its arm in flight changes 0 rows, counted", async () => {
    const a = await trappedDispatcher();
    await waitUntil("a holds 16 shards", shardOwners, (o) => o[a.nodeId] === 16);
    const tasks = await submitSpread(30, 1500, 100, "paused");
    await waitUntil(
      "a has armed tasks not yet due",
      () =>
        withPg(
          db.url,
          async (c) =>
            (
              await c.query(
                `SELECT count(*)::int AS n FROM tasks
                  WHERE type = 'paused' AND status = 'ARMED' AND run_at > now() + interval '300 milliseconds'`,
              )
            ).rows[0].n as number,
        ),
      (n) => n >= 3,
    );
    // Pause a between claim and arm: it claimed under a lease valid at the time (rule 2 held),
    // and the fenced UPDATE goes out only after SIGCONT. Tasks due within the claim lookahead
    // make sure there is a next claim.
    a.process.kill("SIGUSR2");
    await a.printed(/^TRAP SET$/);
    tasks.push(...(await submitSpread(5, 900, 0, "paused")));
    const inFlight = armLines(await a.printed(/^STOPPING BEFORE ARM (.*)$/));
    await waitUntil(
      "a is stopped",
      () => processState(a.process.pid!),
      (s) => s === "T",
    );
    const stoppedAtMs = Date.now();
    const inFlightIds = inFlight.flatMap((b) => b.ids);
    expect(inFlightIds.length).toBeGreaterThan(0);
    // What a holds in its wheels: armed, and not due before it stopped (never early), so not published by it.
    const held = await withPg(
      db.url,
      async (c) =>
        (
          await c.query(
            `SELECT id, dispatch_shard AS shard, dispatch_epoch::int AS epoch FROM tasks
              WHERE type = 'paused' AND status = 'ARMED' AND run_at > $1::timestamptz`,
            [new Date(stoppedAtMs).toISOString()],
          )
        ).rows as Array<{ id: string; shard: number; epoch: number }>,
    );
    expect(held.length).toBeGreaterThan(0);

    const b = await dispatcher();
    await expect.poll(allPublished(tasks), { timeout: 20_000 }).toBe(true);
    expect((await shardOwners())[b.nodeId]).toBe(16);
    // b adopted a's claims, armed them under its newer epochs and published them; nothing
    // touches these rows any more (no worker, no reconciler), unless a's stale arm does.
    const beforeResume = await rowsOf(inFlightIds);
    const aEpochOf = new Map(inFlight.flatMap((b) => b.ids.map((id) => [id, b.epoch] as const)));
    for (const row of beforeResume) {
      expect(row.status).toBe("ARMED");
      expect(row.epoch).toBeGreaterThan(aEpochOf.get(row.id)!);
    }

    a.process.kill("SIGCONT");
    const answered = await waitUntil(
      "a's in-flight arm answered",
      () => a.lines(/^ARM AFTER RESUME (.*)$/).flatMap(armLines),
      (lines) => inFlightIds.every((id) => lines.some((l) => l.ids.includes(id))),
    );
    // The stale fence joined no lease row: the UPDATE armed nothing and wrote no row.
    for (const line of answered) expect(line).toMatchObject({ fenced: false, armed: 0 });
    expect(await rowsOf(inFlightIds)).toEqual(beforeResume);
    await expect
      .poll(() => a.metric("cf_dispatch_stale_epoch_rejections_total", 'where="db"'))
      .toBeGreaterThanOrEqual(inFlightIds.length);

    // Resumed: a has run a heartbeat (its membership lease is live again) and knows what it lost.
    await waitUntil(
      "a's membership lease is live again",
      () =>
        withPg(db.url, async (c) =>
          Number(
            (
              await c.query(
                "SELECT count(*) AS n FROM leases WHERE name = $1 AND expires_at > now()",
                [`node:shard:${a.nodeId}`],
              )
            ).rows[0].n,
          ),
        ),
      (n) => n === 1,
    );
    const heldIds = new Set(held.map((h) => h.id));
    const fromA = consumer.messages.filter((m) => m.envelope.dispatcher === a.nodeId);
    expect(fromA.filter((m) => heldIds.has(m.envelope.task_id))).toEqual([]);
    expect(fromA.filter((m) => inFlightIds.includes(m.envelope.task_id))).toEqual([]);
    for (const h of held) expect(consumer.ofTask(h.id).length).toBeGreaterThanOrEqual(1);
    // What a armed before the pause was taken over under b's newer epoch.
    const epochs = await withPg(
      db.url,
      async (c) =>
        (
          await c.query(
            "SELECT id, dispatch_epoch::int AS epoch FROM tasks WHERE id = ANY($1::uuid[])",
            [[...heldIds]],
          )
        ).rows as Array<{ id: string; epoch: number }>,
    );
    const oldEpoch = new Map(held.map((h) => [h.id, h.epoch]));
    for (const row of epochs) expect(row.epoch).toBeGreaterThan(oldEpoch.get(row.id)!);
    // It learns that it lost its shards (refused renewal, local expiry or a fenced write):
    // shard by shard, as each one's renewal or write comes round after the resume.
    await expect
      .poll(() => a.metric("cf_lease_events_total", 'event="lost"'), { timeout: 10_000 })
      .toBeGreaterThanOrEqual(16);
    // Any other arm it started after resuming was refused as well.
    for (const line of a.lines(/^ARM AFTER RESUME (.*)$/).flatMap(armLines))
      expect(line).toMatchObject({ fenced: false, armed: 0 });
    expectAllPublishedNoneEarly(tasks);
  }, 120_000); // more than the waits above together
});

describe("failover", () => {
  it("the survivor takes the shards of a killed dispatcher within the lease TTL; every task is published, none early", async () => {
    // The killed node's leases lapse at most a TTL after the kill, and the survivor takes them
    // at its next heartbeat after that. Half a TTL more is the slack for a loaded machine; a
    // takeover that waited for a second lease period (at least 2 TTL − 1 heartbeat after the
    // kill) still fails. Leases of 3 s keep that slack 1.5 s wide.
    const ttlMs = 3000;
    const takeoverBoundMs = ttlMs + HEARTBEAT_MS + ttlMs / 2;
    const env = { ...dispatcherEnv(), CF_LEASE_TTL_MS: String(ttlMs) };
    const a = await startRolesChild("dispatcher", env);
    const b = await startRolesChild("dispatcher", env);
    await waitUntil(
      "the shards are split between a and b",
      shardOwners,
      (o) =>
        (o[a.nodeId] ?? 0) > 0 &&
        (o[b.nodeId] ?? 0) > 0 &&
        (o[a.nodeId] ?? 0) + (o[b.nodeId] ?? 0) === 16,
      15_000,
    );
    const tasks = await submitSpread(40, 800, 100, "failover");
    await waitUntil(
      "some tasks published",
      () => consumer.publishedIds().size,
      () => tasks.filter((t) => consumer.ofTask(t.id).length > 0).length >= 5,
    );
    a.process.kill("SIGKILL");
    const killedAtMs = Date.now();
    await waitUntil(
      "b holds all 16 shards",
      shardOwners,
      (o) => o[b.nodeId] === 16,
      takeoverBoundMs,
    );
    expect(Date.now() - killedAtMs).toBeLessThanOrEqual(takeoverBoundMs);
    await expect.poll(allPublished(tasks), { timeout: 20_000 }).toBe(true);
    expectAllPublishedNoneEarly(tasks);
    expect((await a.exited).signal).toBe("SIGKILL");
  }, 90_000); // more than the waits above together, so a wait's own message is what fails
});

describe("graceful shutdown", () => {
  it("a dispatcher stopped with SIGTERM hands its shards over at once, not after its leases expire; every task is published, none early", async () => {
    // Leases of 10 s: a shard left to expire would wait that long, one released is taken at
    // the survivor's next heartbeat.
    const ttlMs = 10_000;
    const env = {
      ...dispatcherEnv(),
      CF_LEASE_TTL_MS: String(ttlMs),
      CF_LEASE_SAFETY_MARGIN_MS: "1000",
    };
    const a = await startRolesChild("dispatcher", env);
    const b = await startRolesChild("dispatcher", env);
    await waitUntil(
      "the shards are split between a and b",
      shardOwners,
      (o) => (o[a.nodeId] ?? 0) > 0 && (o[a.nodeId] ?? 0) + (o[b.nodeId] ?? 0) === 16,
      30_000,
    );
    const tasks = await submitSpread(40, 800, 100, "graceful");
    await waitUntil(
      "some tasks published",
      () => tasks.filter((t) => consumer.ofTask(t.id).length > 0).length,
      (n) => n >= 5,
    );
    a.process.kill("SIGTERM");
    expect(await a.exited).toEqual({ code: 0, signal: null });
    const exitedAtMs = Date.now();
    await waitUntil("b holds all 16 shards", shardOwners, (o) => o[b.nodeId] === 16, ttlMs);
    // Released, its shards go at b's next heartbeat (250 ms); left to expire, they would take
    // about a TTL less a heartbeat. Half the TTL tells the two apart with seconds to spare.
    expect(Date.now() - exitedAtMs).toBeLessThan(ttlMs / 2);
    await expect.poll(allPublished(tasks), { timeout: 20_000 }).toBe(true);
    expectAllPublishedNoneEarly(tasks);
  }, 90_000);
});
