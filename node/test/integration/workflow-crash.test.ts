/**
 * A worker killed (-9) in the middle of a workflow (`chronofence run --roles
 * worker` as child processes; API and dispatch roles in-process): the
 * node it was running is retried by the reconciler after its lease expires,
 * another worker runs the rest, and every node ran (its last attempt) only
 * after all its parents completed; the workflow ends COMPLETED with each
 * node COMPLETED once.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { call, type TestTenant } from "./support/api.js";
import { requireKafka } from "./support/kafka.js";
import { type Pipeline, startPipeline, workerChild } from "./support/pipeline.js";
import { killRolesChildren } from "./support/roles-child.js";
import { withPg } from "./support/services.js";

const WORKER_LEASE_MS = 1500;

let fixture: Pipeline;
let tenant: TestTenant;

beforeAll(async () => {
  await requireKafka();
  fixture = await startPipeline("workflow-crash", { reconcileIntervalMs: 300 }, { worker: false });
  ({ tenant } = fixture);
});

afterEach(() => killRolesChildren());

afterAll(async () => {
  killRolesChildren();
  await fixture?.stop();
});

const worker = (nodeId: string) => workerChild(fixture, nodeId, WORKER_LEASE_MS);

interface NodeRow {
  key: string;
  status: string;
  attempt: number;
  lease_owner: string | null;
  result: unknown;
  started_ms: number;
  completed_ms: number | null;
  parents: string[];
}

const nodesOf = (workflowId: string): Promise<NodeRow[]> =>
  withPg(
    fixture.db.url,
    async (c) =>
      (
        await c.query(
          `SELECT t.workflow_node AS key, t.status, t.attempt, t.lease_owner, t.result,
                  (extract(epoch FROM t.started_at) * 1000)::float8 AS started_ms,
                  (extract(epoch FROM t.completed_at) * 1000)::float8 AS completed_ms,
                  coalesce((SELECT array_agg(e.parent_key) FROM workflow_edges e
                             WHERE e.child_task_id = t.id), '{}') AS parents
             FROM tasks t WHERE t.workflow_id = $1 ORDER BY t.workflow_node`,
          [workflowId],
        )
      ).rows,
  );

const sleepNode = (key: string, ms: number, dependsOn: string[] = []) => ({
  key,
  type: "sleep",
  payload: { ms },
  depends_on: dependsOn,
  max_attempts: 3,
  backoff: { base_ms: 100, max_ms: 100 },
});

describe("a worker killed in the middle of a workflow", () => {
  it("every node still runs once its parents completed; the workflow completes", async () => {
    const victim = await worker("victim");
    const middle = ["m1", "m2", "m3", "m4"];
    const answer = await call(fixture.api.baseUrl, "POST", "/v1/workflows", {
      key: tenant.apiKey,
      body: {
        nodes: [
          sleepNode("root", 200),
          ...middle.map((k) => sleepNode(k, 2500, ["root"])),
          sleepNode("join", 200, middle),
          sleepNode("tail", 200, ["join"]),
        ],
      },
    });
    expect(answer.status).toBe(201);
    const id: string = answer.body.id;
    // Kill the victim while it runs a middle node (the root is done, the join waits).
    await expect
      .poll(
        async () =>
          (await nodesOf(id)).some(
            (n) => middle.includes(n.key) && n.status === "RUNNING" && n.lease_owner === "victim",
          ),
        { timeout: 60_000, interval: 50 },
      )
      .toBe(true);
    victim.process.kill("SIGKILL");
    await victim.exited;
    // Frozen until the reconciler expires the dead worker's leases (≥ a lease from its last beat).
    const killedWhileRunning = (await nodesOf(id))
      .filter((n) => n.status === "RUNNING")
      .map((n) => n.key);
    await worker("survivor");
    await expect
      .poll(
        async () =>
          (await call(fixture.api.baseUrl, "GET", `/v1/workflows/${id}`, { key: tenant.apiKey }))
            .body.status,
        { timeout: 120_000, interval: 200 },
      )
      .toBe("COMPLETED");
    const nodes = await nodesOf(id);
    expect(nodes.map((n) => [n.key, n.status])).toEqual(
      ["join", "m1", "m2", "m3", "m4", "root", "tail"].map((k) => [k, "COMPLETED"]),
    );
    const byKey = new Map(nodes.map((n) => [n.key, n]));
    for (const node of nodes) {
      // The killed attempts ran again (attempt 2), every other node once.
      expect(node.attempt).toBe(killedWhileRunning.includes(node.key) ? 2 : 1);
      expect(node.result).toMatchObject({ slept_ms: expect.any(Number) });
      for (const parent of node.parents) {
        expect(node.started_ms).toBeGreaterThanOrEqual(byKey.get(parent)!.completed_ms!);
      }
    }
    expect(killedWhileRunning.length).toBeGreaterThan(0);
    expect(byKey.get("join")!.lease_owner).toBe("survivor");
  }, 240_000);
});
