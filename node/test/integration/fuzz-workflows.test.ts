/**
 * Hostile workflows to POST /v1/workflows: huge, deep and degenerate DAGs
 * (cycles, self-edges, duplicate keys, more than 10,000 nodes, long chains
 * that go wrong at the far end, unknown parents, bad trigger rules, too
 * many edges) and malformed envelopes. Each must be refused with a 4xx and
 * an error code, nothing may be stored, and a valid workflow is accepted
 * afterwards. The harness (support/fuzz.ts) seeds the cases from
 * CF_PROPERTY_SEED and prints the command that replays a failing one:
 *
 *   CF_PROPERTY_SEED=<seed> CF_FUZZ_CASE=<index> npx vitest run node/test/integration/fuzz-workflows.test.ts
 *
 * The limits themselves (10,000 nodes, MAX_WORKFLOW_EDGES parents in all)
 * are checked from the accepting side too: a 10,000-node chain is stored.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_WORKFLOW_EDGES, MAX_WORKFLOW_NODES } from "../../src/domain/workflow.js";
import { type ApiFixture, call, startApiFixture } from "./support/api.js";
import { type FuzzCase, failureMessage, type Rng, runFuzz, storedRows } from "./support/fuzz.js";

const FILE = "node/test/integration/fuzz-workflows.test.ts";
const MAX_BODY_BYTES = 2 * 1024 * 1024;

let fixture: ApiFixture;

beforeAll(async () => {
  fixture = await startApiFixture(
    // Large workflows take a while to validate and store on a loaded machine.
    { maxBatchBodyBytes: MAX_BODY_BYTES, requestTimeoutMs: 20_000 },
    { maxPayloadBytes: 1024, ratePerS: 1e9, burst: 1e9 },
  );
});

afterAll(async () => {
  await fixture?.stop();
});

interface Node {
  key: unknown;
  type?: unknown;
  depends_on?: unknown;
  trigger_rule?: unknown;
  [field: string]: unknown;
}

const node = (key: string, depends_on?: string[]): Node =>
  depends_on === undefined ? { key, type: "wf.fuzz" } : { key, type: "wf.fuzz", depends_on };
/** n0 ← n1 ← … ← n(n-1): each node depends on the one before. */
const chain = (n: number): Node[] =>
  Array.from({ length: n }, (_, i) => node(`n${i}`, i === 0 ? undefined : [`n${i - 1}`]));

/** A valid workflow broken in one place, usually far from the start. */
function degenerateDag(rng: Rng): { kind: string; nodes: Node[] } {
  const size = rng.pick([2, 3, 10, 100, 1000, 5000, MAX_WORKFLOW_NODES]);
  const nodes = chain(size);
  const at = size - 1 - rng.int(Math.min(size, 3)); // near the end: the validator must get there
  const target = nodes[at]!;
  switch (rng.int(8)) {
    case 0: {
      // The first node depends on a later one: a cycle through the whole chain.
      const to = rng.int(size);
      nodes[0] = node("n0", [`n${to}`]);
      return { kind: to === 0 ? "self edge" : `cycle of ${to + 1}`, nodes };
    }
    case 1:
      target.depends_on = [
        ...((target.depends_on as string[] | undefined) ?? []),
        target.key as string,
      ];
      return { kind: "self edge", nodes };
    case 2:
      nodes[at] = { ...target, key: `n${rng.int(size)}` };
      if (nodes[at]!.key === target.key) nodes.push(node(target.key as string));
      return { kind: "duplicate key", nodes };
    case 3:
      target.depends_on = [rng.pick(["missing", "", "N0", "n0 ", `n${size}`])];
      return { kind: "unknown parent", nodes };
    case 4:
      target.trigger_rule = rng.pick([
        "",
        "ALL_SUCCESS",
        "all_success ",
        "any",
        "none_skipped",
        1,
        null,
        [],
        {},
      ]);
      return { kind: "bad trigger rule", nodes };
    case 5:
      target.depends_on = rng.pick(["n0", [1], [null], {}, [["n0"]], 7]);
      return { kind: "bad depends_on", nodes };
    case 6:
      if (at > 0) target.depends_on = [`n${at - 1}`, `n${at - 1}`];
      else nodes.push(node("dup", ["n0", "n0"]));
      return { kind: "duplicate parent", nodes };
    default:
      target.key = rng.pick(["", "a b", "k".repeat(129), "ü", 1, null]);
      return { kind: "bad key", nodes };
  }
}

function workflowCase(rng: Rng): FuzzCase {
  const post = (kind: string, body: string): FuzzCase => ({
    kind,
    method: "POST",
    path: "/v1/workflows",
    body,
  });
  switch (rng.int(10)) {
    case 0:
    case 1:
    case 2: {
      const { kind, nodes } = degenerateDag(rng);
      return post(kind, JSON.stringify({ nodes }));
    }
    case 3: {
      const count = MAX_WORKFLOW_NODES + 1 + rng.int(2000);
      return post("too many nodes", JSON.stringify({ nodes: chain(count) }));
    }
    case 4: {
      // Every node depends on every node before it: few nodes, a great many edges.
      const size = Math.ceil(Math.sqrt(2 * MAX_WORKFLOW_EDGES)) + 2 + rng.int(100);
      const nodes = Array.from({ length: size }, (_, i) =>
        node(
          `n${i}`,
          Array.from({ length: i }, (_, j) => `n${j}`),
        ),
      );
      return post("too many edges", JSON.stringify({ nodes }));
    }
    case 5: {
      // Deep JSON where a node or its payload should be.
      const depth = 33 + rng.int(rng.next() < 0.1 ? 100_000 : 500);
      const deep = "[".repeat(depth) + "]".repeat(depth);
      return post(
        "deep JSON",
        rng.pick([
          `{"nodes":${deep}}`,
          `{"nodes":[{"key":"a","type":"t","payload":${deep}}]}`,
          `{"nodes":[{"key":"a","type":"t","depends_on":${deep}}]}`,
        ]),
      );
    }
    case 6: {
      const body = rng.pick([
        "{}",
        '{"nodes":null}',
        '{"nodes":{}}',
        '{"nodes":[]}',
        '{"nodes":[null]}',
        '{"nodes":[1]}',
        '{"nodes":[{"key":"a"}]}',
        '{"nodes":[{"type":"t"}]}',
        '{"nodes":[{"key":"a","type":"t"}],"x":1}',
        '{"nodes":[{"key":"a","type":"t"}],"fail_fast":"yes"}',
        '{"nodes":[{"key":"a","type":"t","idempotency_key":"k"}]}',
        '{"nodes":[{"key":"a","type":"t","max_attempts":0}]}',
        '{"nodes":[{"key":"a","type":"t","run_at":"tomorrow"}]}',
        '{"nodes":[{"key":"a","type":"t","delay_ms":-1}]}',
        '{"nodes":[{"key":"a","type":"t","payload":"\\u0000"}]}',
        '[{"key":"a","type":"t"}]',
        "null",
        '"nodes"',
      ]);
      return post("malformed workflow", body);
    }
    case 7: {
      // A hostile key or type in an otherwise fine node.
      const key = rng.pick(["__proto__", "constructor", "toString", "hasOwnProperty"]);
      return post(
        "hostile node key",
        JSON.stringify({ nodes: [node(key), node("b", [key]), { ...node("c"), [key]: 1 }] }),
      );
    }
    case 8: {
      const nodes = chain(2 + rng.int(50));
      nodes[rng.int(nodes.length)]!.payload = "p".repeat(1025 + rng.int(3000));
      return post("oversized node payload", JSON.stringify({ nodes }));
    }
    default:
      return {
        kind: "bad query",
        method: rng.pick(["GET", "DELETE"]),
        path: `/v1/workflows/${rng.pick(["x", "%00", "..%2F..", "0".repeat(36), "01a22671-d5ac-7ed8-b442-80a19b2f1155", "'; DROP TABLE workflows; --"])}`,
      };
  }
}

describe("fuzz: workflows", () => {
  it("refuses 400 huge, deep and degenerate workflows with 4xx, stores nothing, and keeps serving", async () => {
    const before = await storedRows(fixture.withDb);
    const run = await runFuzz({
      file: FILE,
      target: {
        baseUrl: fixture.api.baseUrl,
        apiKey: fixture.tenant.apiKey,
        limitOf: () => MAX_BODY_BYTES,
      },
      count: 400,
      concurrency: 8, // the big cases cost the server (and this process) most
      generate: workflowCase,
    });
    expect(run.failures.slice(0, 10), failureMessage(run)).toEqual([]);
    expect(await storedRows(fixture.withDb), "rows written by refused requests").toEqual(before);
    const ok = await call(fixture.api.baseUrl, "POST", "/v1/workflows", {
      key: fixture.tenant.apiKey,
      body: { nodes: chain(3) },
    });
    expect(ok.status).toBe(201);
  }, 600_000);

  it("accepts the largest workflows the limits allow: a 10,000-node chain", async () => {
    const answer = await call(fixture.api.baseUrl, "POST", "/v1/workflows", {
      key: fixture.tenant.apiKey,
      body: { nodes: chain(MAX_WORKFLOW_NODES) },
    });
    expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(201);
    const stored = await fixture.withDb(async (db) => {
      const nodes = await db.query(
        "SELECT count(*)::int AS n FROM workflow_nodes WHERE workflow_id = $1",
        [answer.body.id],
      );
      const edges = await db.query(
        "SELECT count(*)::int AS n FROM workflow_edges WHERE workflow_id = $1",
        [answer.body.id],
      );
      return { nodes: nodes.rows[0].n, edges: edges.rows[0].n };
    });
    expect(stored).toEqual({ nodes: MAX_WORKFLOW_NODES, edges: MAX_WORKFLOW_NODES - 1 });
  }, 120_000);
});
