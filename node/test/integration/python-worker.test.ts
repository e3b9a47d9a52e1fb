/**
 * The Python worker of docs/workers.md, exactly as the page shows it, runs
 * tasks end to end: the dispatch roles publish to Kafka, the script consumes
 * them and makes the fenced HTTP calls, and the tasks end COMPLETED with its
 * results. A type it has no handler for is left alone. No Node worker runs.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { submitTask } from "./support/api.js";
import { requireKafka, TEST_KAFKA_BROKERS } from "./support/kafka.js";
import { type Pipeline, startPipeline } from "./support/pipeline.js";
import { withPg } from "./support/services.js";

vi.setConfig({ testTimeout: 120_000 });

const DOC = fileURLToPath(new URL("../../../docs/workers.md", import.meta.url));

/** The first Python interpreter here that has confluent_kafka, or a failure saying how to get one. */
function requirePython(): string {
  for (const python of ["python3", "/usr/bin/python3"]) {
    if (spawnSync(python, ["-c", "import confluent_kafka"]).status === 0) return python;
  }
  throw new Error(
    "no python3 with confluent_kafka for the docs' Python worker; install it with " +
      "`apt-get install -y python3-confluent-kafka` (.ci/run does)",
  );
}

/** The ```python block of the page's "Example: a worker in Python" section. */
function exampleWorker(): string {
  const page = readFileSync(DOC, "utf8");
  const section = page.slice(page.indexOf("## Example: a worker in Python"));
  const match = /```python\n([\s\S]*?)```/.exec(section);
  if (!match) throw new Error(`no python block in ${DOC}`);
  return match[1]!;
}

let fixture: Pipeline;
let worker: ChildProcess | undefined;
let output = "";

beforeAll(async () => {
  const python = requirePython();
  await requireKafka();
  fixture = await startPipeline("python", {}, { worker: false });
  const script = path.join(tmpdir(), `chronofence-worker-${process.pid}.py`);
  writeFileSync(script, exampleWorker());
  worker = spawn(python, [script], {
    env: {
      ...process.env,
      CF_API: fixture.api.baseUrl,
      CF_API_KEYS: JSON.stringify({ [fixture.tenant.id]: fixture.tenant.apiKey }),
      KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(","),
      CF_TOPIC_PREFIX: fixture.config.topicPrefix,
      PYTHONUNBUFFERED: "1",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  worker.stdout!.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  worker.stderr!.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
});

afterAll(async () => {
  worker?.kill("SIGKILL");
  await fixture?.stop();
});

const submit = (body: Record<string, unknown>) =>
  submitTask(fixture.api.baseUrl, fixture.tenant.apiKey, body);

const rowOf = (id: string) =>
  withPg(
    fixture.db.url,
    async (c) =>
      (await c.query("SELECT status, attempt, result, lease_owner FROM tasks WHERE id = $1", [id]))
        .rows[0],
  );

describe("the Python worker of docs/workers.md", () => {
  it("runs the tasks it has handlers for through the HTTP protocol, and leaves the others", async () => {
    const email = await submit({ type: "email.send", payload: { to: "a@b.c" }, delay_ms: 300 });
    const noop = await submit({ type: "noop", priority: "critical", delay_ms: 300 });
    const other = await submit({ type: "image.resize", delay_ms: 300 });
    for (const id of [email, noop]) {
      await expect
        .poll(async () => (await rowOf(id)).status, { timeout: 60_000, interval: 200 })
        .toBe("COMPLETED");
    }
    expect(await rowOf(email)).toMatchObject({ attempt: 1, result: { sent: true } });
    expect((await rowOf(email)).lease_owner).toMatch(/^py-/);
    expect(await rowOf(noop)).toMatchObject({ attempt: 1, result: null });
    expect(output).toContain("sending {'to': 'a@b.c'}");
    // No handler for it: never started by the Python worker.
    const left = await rowOf(other);
    expect(["SCHEDULED", "ARMED"]).toContain(left.status);
    expect(left.attempt).toBe(0);
  });
});
