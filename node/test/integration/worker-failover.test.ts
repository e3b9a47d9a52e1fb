/**
 * Workers under real process failures (`chronofence run --roles worker` as
 * child processes; API and dispatch roles in-process):
 *  - zombie: a worker paused (SIGSTOP) past its execution lease loses the
 *    task to the reconciler (new token); another worker runs it with a
 *    higher token and completes it; the resumed zombie stops at its local
 *    lease deadline or its late writes are refused: nothing changes, and it
 *    is counted;
 *  - kill -9 in the middle of a task: it runs again and completes, once;
 *  - SIGTERM with a task still running after the drain timeout: its attempt
 *    is recorded as interrupted (fenced, due at once, the attempt given
 *    back), so another worker completes it long before its lease expires.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { submitTask, type TestTenant } from "./support/api.js";
import { requireKafka } from "./support/kafka.js";
import { type Pipeline, startPipeline, workerChild } from "./support/pipeline.js";
import { killRolesChildren } from "./support/roles-child.js";
import { withPg } from "./support/services.js";

const WORKER_LEASE_MS = 1500;

let fixture: Pipeline;
let tenant: TestTenant;

beforeAll(async () => {
  await requireKafka();
  fixture = await startPipeline("worker-failover", { reconcileIntervalMs: 300 }, { worker: false });
  ({ tenant } = fixture);
});

afterEach(() => killRolesChildren());

afterAll(async () => {
  killRolesChildren();
  await fixture?.stop();
});

// The kill -9 test's endpoint is on loopback, which the http handler refuses unless allowed.
const worker = (nodeId: string) =>
  workerChild(fixture, nodeId, WORKER_LEASE_MS, { CF_HTTP_HANDLER_ALLOW: "127.0.0.1/32" });

const submit = (body: Record<string, unknown>) =>
  submitTask(fixture.api.baseUrl, tenant.apiKey, body);

const rowOf = (id: string) =>
  withPg(
    fixture.db.url,
    async (c) =>
      (
        await c.query(
          `SELECT status, attempt, lease_owner, fencing_token::text AS token, result
             FROM tasks WHERE id = $1`,
          [id],
        )
      ).rows[0] as {
        status: string;
        attempt: number;
        lease_owner: string | null;
        token: string;
        result: unknown;
      },
  );

const runningOn = (id: string, owner: string) =>
  expect
    .poll(async () => rowOf(id), { timeout: 60_000, interval: 50 })
    .toMatchObject({ status: "RUNNING", lease_owner: owner });

describe("worker failures", () => {
  it("a zombie worker's late commit changes nothing; the worker that took over completes", async () => {
    const zombie = await worker("zombie");
    const id = await submit({
      type: "sleep",
      payload: { ms: 3000 },
      max_attempts: 3,
      backoff: { base_ms: 100, max_ms: 100 },
    });
    await runningOn(id, "zombie");
    const zombieToken = (await rowOf(id)).token;
    zombie.process.kill("SIGSTOP");
    const rescuer = await worker("rescuer");
    await expect
      .poll(async () => rowOf(id), { timeout: 60_000, interval: 100 })
      .toMatchObject({ status: "COMPLETED", lease_owner: "rescuer", attempt: 2 });
    const completed = await rowOf(id);
    expect(BigInt(completed.token)).toBeGreaterThan(BigInt(zombieToken));

    zombie.process.kill("SIGCONT");
    // Resumed past its lease: either its local lease deadline (by its monotonic clock) aborts the
    // handler before anything more is sent, or a heartbeat or commit already under way arrives
    // with the old token and is refused. Either way it is counted, and it changes nothing.
    const noticed = async () =>
      (await zombie.metric("cf_worker_stale_token_total")) +
      (await zombie.metric("cf_worker_lease_deadline_total"));
    await expect.poll(noticed, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
    expect(await zombie.metric("cf_worker_outcomes_total", 'outcome="completed"')).toBe(0);
    expect(await rowOf(id)).toEqual(completed);
    expect(await rescuer.metric("cf_worker_outcomes_total", 'outcome="completed"')).toBe(1);
    expect(await rescuer.metric("cf_worker_consumer_up", 'queue="standard"')).toBe(1);
  }, 180_000);

  it("kill -9 in the middle of a task: it runs again and completes once", async () => {
    const requests: Array<{ token: string; attempt: string }> = [];
    // The first delivery is answered only after the kill, so the worker is surely in the
    // middle of it when it dies, however slow the machine; later ones are answered at once.
    let answerFirst!: () => void;
    const firstAnswered = new Promise<void>((resolve) => {
      answerFirst = resolve;
    });
    const server = http.createServer((request, response) => {
      requests.push({
        token: String(request.headers["x-chronofence-fencing-token"]),
        attempt: String(request.headers["x-chronofence-attempt"]),
      });
      request.resume();
      const answer = () => response.end('{"done":true}');
      if (requests.length === 1) void firstAnswered.then(answer);
      else answer();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    try {
      const victim = await worker("victim");
      const id = await submit({
        type: "http",
        payload: { url },
        max_attempts: 3,
        backoff: { base_ms: 100, max_ms: 100 },
      });
      await runningOn(id, "victim");
      // In the middle of the task: the endpoint has the first delivery and has not answered.
      await expect.poll(() => requests.length, { timeout: 30_000, interval: 20 }).toBe(1);
      victim.process.kill("SIGKILL");
      await victim.exited;
      answerFirst(); // to a connection that died with the worker
      const survivor = await worker("survivor");
      await expect
        .poll(async () => (await rowOf(id)).status, { timeout: 60_000, interval: 100 })
        .toBe("COMPLETED");
      expect(await rowOf(id)).toMatchObject({
        lease_owner: "survivor",
        attempt: 2,
        result: { status: 200, body: { done: true } },
      });
      expect(await survivor.metric("cf_worker_outcomes_total", 'outcome="completed"')).toBe(1);
      // Two deliveries to the endpoint, the second with a higher token: the receiver can tell.
      expect(requests.map((r) => r.attempt)).toEqual(["1", "2"]);
      expect(BigInt(requests[1]!.token)).toBeGreaterThan(BigInt(requests[0]!.token));
    } finally {
      answerFirst();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 180_000);

  it("SIGTERM past the drain timeout: the running task is retried at once, not after its lease", async () => {
    // Long enough that the handler is still sleeping when SIGTERM lands, on a loaded machine too.
    const SLEEP_MS = 10_000;
    const stopping = await workerChild(fixture, "stopping", 60_000, { CF_DRAIN_TIMEOUT_MS: "300" });
    const id = await submit({ type: "sleep", payload: { ms: SLEEP_MS }, max_attempts: 1 });
    await runningOn(id, "stopping");
    const leaseExpiresAtMs = await withPg(fixture.db.url, async (c) => {
      const r = await c.query(
        "SELECT (extract(epoch FROM lease_expires_at) * 1000)::float8 AS ms FROM tasks WHERE id = $1",
        [id],
      );
      return r.rows[0].ms as number;
    });
    stopping.process.kill("SIGTERM");
    expect(await stopping.exited).toEqual({ code: 0, signal: null });
    // It did not wait for the handler (that would have completed the task, by "stopping"):
    // after the drain timeout, the fenced interrupt recorded the attempt as given back.
    const interrupted = await withPg(fixture.db.url, async (c) => {
      const r = await c.query(
        "SELECT status, attempt, last_error, completed_at FROM tasks WHERE id = $1",
        [id],
      );
      return r.rows[0];
    });
    // Due at once: SCHEDULED, or armed again already by the dispatcher; the attempt given back.
    expect(["SCHEDULED", "ARMED"]).toContain(interrupted.status);
    expect(interrupted).toMatchObject({ attempt: 0, completed_at: null });
    expect(interrupted.last_error).toMatchObject({
      code: "worker_stopping",
      worker_id: "stopping",
    });

    await worker("rescuer");
    await expect
      .poll(async () => (await rowOf(id)).status, { timeout: 60_000, interval: 100 })
      .toBe("COMPLETED");
    const done = await withPg(fixture.db.url, async (c) => {
      const r = await c.query(
        `SELECT attempt, lease_owner, (extract(epoch FROM completed_at) * 1000)::float8 AS ms,
                (SELECT count(*)::int FROM dead_letters WHERE task_id = $1) AS letters
           FROM tasks WHERE id = $1`,
        [id],
      );
      return r.rows[0];
    });
    // Its one attempt was given back, so it ran again (and not as a second attempt).
    expect(done).toMatchObject({ attempt: 1, lease_owner: "rescuer", letters: 0 });
    expect(done.ms).toBeLessThan(leaseExpiresAtMs);
  }, 180_000);
});
